package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api/capability"
)

// mustParse parses a policy of a test.
func mustParse(t testing.TB, doc string) *Policy {
	t.Helper()
	p, err := Parse("policy.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// TestParseSamples checks that the shipped examples parse and grant what
// they say.
func TestParseSamples(t *testing.T) {
	p, err := LoadUntrusted("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	di := p.GrantFor("10", "device-injector")
	if got, want := di.Capabilities(), capability.NewSet(capability.Devices, capability.Mounts, capability.CDIDevices); got != want {
		t.Errorf("device-injector: capabilities %v, want %v", got, want)
	}
	if ns := di.Where().GetNamespaces(); len(ns) != 1 || ns[0] != "gpu-workloads" {
		t.Errorf("device-injector: where %v", di.Where())
	}
	if g := p.GrantFor("20", "logger"); !g.Capabilities().Empty() || g.String() != "testdata/samples.yaml:57: grants[5]" {
		t.Errorf("logger: %s, capabilities %v", g, g.Capabilities())
	}
	all, err := LoadUntrusted("testdata/allow-all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := all.GrantFor("10", "x").Capabilities(); got != capability.All() {
		t.Errorf("allow-all: capabilities %v, missing %v", got, got.Missing(capability.All()))
	}
}

// TestParseErrors checks that every kind of mistake is reported with the
// file and the line of the mistake.
func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown key":          {"grants:\n  - plugins: [x]\n    adjsut: {}\n", `policy.yaml:3: unknown key "adjsut" in grants[0] (did you mean "adjust"?)`},
		"unknown nested key":   {"default:\n  adjust:\n    mounts:\n      source: [/x]\n", `policy.yaml:4: unknown key "source" in default.adjust.mounts (did you mean "sources"?)`},
		"duplicate key":        {"default:\n  evict: true\n  evict: false\n", `policy.yaml:3: mapping key "evict" already defined at line 2`},
		"wrong type":           {"default:\n  adjust:\n    env: NVIDIA_*\n", `policy.yaml:3: cannot unmarshal a string ("NVIDIA_*") into default.adjust.env: want a list`},
		"bad size":             {"default:\n  update:\n    memory: {maxLimit: lots}\n", `policy.yaml:3: invalid size "lots"`},
		"two documents":        {"version: 1\n---\nversion: 1\n", "policy.yaml:2: more than one YAML document"},
		"syntax":               {"default:\n  adjust:\n   env: [a\n", "policy.yaml:3: did not find expected ',' or ']'"},
		"version":              {"version: 2\n", "policy.yaml:1: version: unknown version 2: want 1"},
		"no plugins":           {"grants:\n  - adjust: {args: true}\n", "policy.yaml:2: grants[0]: no plugins"},
		"bad plugin pattern":   {"grants:\n  - plugins: [ok, \"[x\"]\n", "policy.yaml:2: grants[0].plugins[1]: pattern \"[x\""},
		"bad plugin name":      {"grants:\n  - plugins: [\"a b\"]\n", "policy.yaml:2: grants[0].plugins[0]: invalid plugin name"},
		"bad required":         {"required: [\"10-\"]\n", "policy.yaml:1: required[0]: invalid plugin name: empty"},
		"default with plugins": {"default:\n  plugins: [x]\n", "policy.yaml:2: default.plugins: the default grant"},
		"bad env glob":         {"default:\n  adjust:\n    env:\n      - A\n      - \"B[\"\n", "policy.yaml:5: default.adjust.env[1]: pattern \"B[\""},
		"relative source":      {"default:\n  adjust:\n    mounts:\n      sources:\n        - path: srv\n", "policy.yaml:5: default.adjust.mounts.sources[0].path: \"srv\" is not an absolute clean path"},
		"unclean source":       {"default:\n  adjust:\n    mounts:\n      sources: [{path: /srv/../etc}]\n", "policy.yaml:4: default.adjust.mounts.sources[0].path: \"/srv/../etc\" is not an absolute clean path"},
		"bind as a type":       {"default:\n  adjust:\n    mounts:\n      types: [bind]\n", "policy.yaml:4: default.adjust.mounts.types[0]: type \"bind\""},
		"device no major":      {"default:\n  adjust:\n    devices:\n      - {path: /dev/sda, type: b}\n", "policy.yaml:4: default.adjust.devices[0]: major: required for a b device"},
		"device type":          {"default:\n  adjust:\n    devices:\n      - {path: /dev/x, type: z}\n", "policy.yaml:4: default.adjust.devices[0].type: type \"z\" is not one of c, b, p"},
		"unknown rlimit":       {"default:\n  adjust:\n    rlimits:\n      RLIMIT_FOO: {hard: 1}\n", "policy.yaml:4: default.adjust.rlimits.RLIMIT_FOO: unknown rlimit \"RLIMIT_FOO\""},
		"unknown namespace":    {"default:\n  adjust:\n    namespaces:\n      join: [net]\n", "policy.yaml:4: default.adjust.namespaces.join[0]: unknown namespace type \"net\""},
		"unknown io class":     {"default:\n  adjust:\n    ioPriority:\n      classes: [BE]\n", "policy.yaml:4: default.adjust.ioPriority.classes[0]: unknown I/O priority class \"BE\""},
		"unknown sched policy": {"default:\n  adjust:\n    scheduler: {policies: [FIFO]}\n", "policy.yaml:3: default.adjust.scheduler.policies[0]: unknown scheduling policy \"FIFO\""},
		"unknown mpol mode":    {"default:\n  adjust:\n    memoryPolicy: {modes: [bind]}\n", "policy.yaml:3: default.adjust.memoryPolicy.modes[0]: unknown memory policy mode \"bind\""},
		"oom range":            {"default:\n  adjust:\n    oomScoreAdj: {min: 10, max: -10}\n", "policy.yaml:3: default.adjust.oomScoreAdj: want -1000 <= min <= max <= 1000"},
		"nice range":           {"default:\n  adjust:\n    scheduler: {minNice: -21}\n", "policy.yaml:3: default.adjust.scheduler.minNice: want a nice value from -20 to 19"},
		"bad selector":         {"grants:\n  - plugins: [x]\n    where:\n      podLabelSelector: \"team in (a\"\n", "policy.yaml:3: grants[0].where: pod_label_selector: "},
		"bad namespace glob":   {"grants:\n  - plugins: [x]\n    where: {namespaces: [\"[\"]}\n", "policy.yaml:3: grants[0].where: namespaces: "},
		"bad annotation op":    {"default:\n  where:\n    podAnnotations: [{key: a, op: like}]\n", "policy.yaml:2: default.where: pod_annotations: entry 0: annotation \"a\": unknown op"},
		"cel without CEL":      {"default:\n  where: {cel: \"true\"}\n", "policy.yaml:2: default.where: cel: "},
	} {
		_, err := Parse("policy.yaml", []byte(tc.doc))
		var pe *Error
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &pe) || pe.Line == 0 {
			t.Errorf("%s: error %v\nwant prefix %s", name, err, tc.want)
		}
	}
}

// TestParseReportsEveryMistake checks that the mistakes of a file are
// reported together, each at its line, with a bound on how many.
func TestParseReportsEveryMistake(t *testing.T) {
	_, err := Parse("p.yaml", []byte("default:\n  adjust:\n    env: [\"[\"]\n    sysctl: [\"[\"]\n"))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:3: ") || !strings.Contains(err.Error(), "p.yaml:4: ") {
		t.Errorf("two mistakes: %v", err)
	}
	var doc strings.Builder
	doc.WriteString("default:\n  adjust:\n    env:\n")
	for range 50 {
		doc.WriteString("      - \"[\"\n")
	}
	_, err = Parse("p.yaml", []byte(doc.String()))
	if err == nil || strings.Count(err.Error(), "\n") != maxErrors || !strings.HasSuffix(err.Error(), "and 30 more mistakes") {
		t.Errorf("50 mistakes: %v", err)
	}
}

// TestEmptyPolicy checks that an empty policy file is valid and grants
// nothing, and that no policy allows everything.
func TestEmptyPolicy(t *testing.T) {
	for _, doc := range []string{"", "# nothing yet\n", "version: 1\n"} {
		p := mustParse(t, doc)
		g := p.GrantFor("10", "anything")
		if g == nil || !g.Capabilities().Empty() || g.String() != "policy.yaml: no default grant" {
			t.Errorf("%q: grant %v with %v", doc, g, g.Capabilities())
		}
	}
	var none *Policy
	if g := none.GrantFor("10", "x"); g != nil || g.Capabilities() != capability.All() || none.Required() != nil {
		t.Errorf("no policy: grant %v", g)
	}
}

// TestParseSizeLimit checks that a file over MaxFileSize is refused
// before it is decoded.
func TestParseSizeLimit(t *testing.T) {
	data := []byte("# " + strings.Repeat("x", MaxFileSize) + "\n")
	if _, err := Parse("big.yaml", data); err == nil || !strings.Contains(err.Error(), "the limit is") {
		t.Errorf("oversized file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadUntrusted(path); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized file: %v", err)
	}
}

// TestLoadTrust checks that Load refuses a policy file others can write,
// which LoadUntrusted (for nri check policy) reads.
func TestLoadTrust(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("required: [logger]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil || len(p.Required()) != 1 || p.File() != path {
		t.Fatalf("trusted file: %v", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Errorf("world-writable file: %v", err)
	}
	if CheckTrusted(path) == nil {
		t.Error("CheckTrusted accepts a world-writable file")
	}
	if _, err := LoadUntrusted(path); err != nil {
		t.Errorf("LoadUntrusted: %v", err)
	}
}

// TestGrantFor checks how plugins are matched: IDX-NAME, NAME, index and
// glob, the first matching entry in the file's order, and the default.
func TestGrantFor(t *testing.T) {
	p := mustParse(t, `
grants:
  - plugins: [10-exact]
    adjust: {args: true}
  - plugins: [byname]
    adjust: {cgroupsPath: true}
  - plugins: ["42"]
    adjust: {seccompPolicy: true}
  - plugins: ["*-injector"]
    adjust: {env: ["*"]}
  - plugins: [exact, device-injector]
    evict: true
default:
  adjust: {sysctl: ["net.*"]}
`)
	for _, tc := range []struct {
		idx, name string
		want      capability.Capability
	}{
		{"10", "exact", capability.Args},           // IDX-NAME before the NAME of a later entry
		{"20", "exact", capability.Evict},          // another index: the later entry by NAME
		{"90", "byname", capability.CgroupsPath},   // NAME, whatever the index
		{"42", "anyone", capability.SeccompPolicy}, // index
		{"10", "device-injector", capability.Env},  // the glob's entry comes first
		{"10", "hook-injector", capability.Env},    // glob over the IDX-NAME
		{"10", "somebody", capability.Sysctl},      // default
		{"10", "byname-not", capability.Sysctl},    // names match whole
	} {
		g := p.GrantFor(tc.idx, tc.name)
		if got := g.Capabilities(); got != capability.NewSet(tc.want) {
			t.Errorf("%s-%s: grant %s with %v, want %v", tc.idx, tc.name, g, got, tc.want)
		}
	}
	if got := len(p.Grants()); got != 6 {
		t.Errorf("Grants: %d, want 6 (5 and the default)", got)
	}
}
