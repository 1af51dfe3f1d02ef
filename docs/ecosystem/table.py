#!/usr/bin/env python3
# table.py: the results table of docs/ecosystem.md from $ECO_DIR/builds.tsv and $ECO_DIR/logs.
import os, re, sys
E = os.environ['ECO_DIR']
builds = {}
for line in open(f'{E}/builds.tsv'):
    src, build, p, status, detail = (line.rstrip('\n').split('\t') + [''])[:5]
    builds[(src, build, p)] = (status, detail)

def cell_check(src, build, p):
    f = f'{E}/logs/{src}-{build}-{p}-check.txt'
    if not os.path.exists(f):
        return '–'
    t = open(f, errors='replace').read()
    m = re.search(r'^result: (PASS|FAIL) \((.*?)\)', t, re.M)
    if not m:
        return 'no report'
    if m.group(1) == 'PASS':
        n = re.match(r'(\d+) checks', m.group(2)).group(1)
        return f'pass ({n})'
    f2 = re.match(r'(\d+) of (\d+)', m.group(2))
    return f'**fail** {f2.group(1)}/{f2.group(2)}'

def cell_run(src, build, p, mode):
    f = f'{E}/logs/{src}-{build}-{p}-{mode}.txt'
    if not os.path.exists(f):
        return '–'
    t = open(f, errors='replace').read()
    if re.search(r'^OK \d+ steps', t, re.M):
        return 'OK'
    if 'not registered' in t or 'did not register' in t or 'expired' in t:
        return '**not registered**'
    if re.search(r'^FAILED', t, re.M):
        return '**failed**'
    return '**error**'

sources = [('np-v0.14.0', 'nri-plugins v0.14.0'), ('np-main', 'nri-plugins main'), ('nri', 'containerd/nri plugins/')]
print('| source | plugin | released: build | check | run | serve | on compat: build | check | run | serve |')
print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
for src, name in sources:
    plugins = []
    for (s, b, p) in builds:
        if s == src and p not in plugins:
            plugins.append(p)
    if not plugins:
        print(f'| {name} | (every command) | not built yet | | | | | | | |')
    for p in plugins:
        row = [name, p]
        for build in ('released', 'compat'):
            st = builds.get((src, build, p), ('–', ''))[0]
            row.append('ok' if st == 'ok' else ('**fail**' if st == 'FAIL' else st))
            if st == 'ok':
                row += [cell_check(src, build, p), cell_run(src, build, p, 'run'), cell_run(src, build, p, 'serve')]
            else:
                row += ['–', '–', '–']
        print('| ' + ' | '.join(row) + ' |')
