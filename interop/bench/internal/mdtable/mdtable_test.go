package mdtable

import (
	"math"
	"strings"
	"testing"
)

// old is a table as commits before the rounds printed it; current as
// they print it now.
const old = `
floor (bare ttrpc CreateContainer, unix socket, child process): p50 265 µs

| scenario | metric | upstream | nrikit | upstream/floor | nrikit/floor | nrikit/upstream | note |
|---|---|---:|---:|---:|---:|---:|---|
| CreateContainer, 1 plugin(s) | p50 | 300 µs | 200 µs | 1.24 | 0.84 | 0.67 |  |
| plugin process (1 plugin, after the CreateContainer runs) | VmRSS | 12.9 MiB | 16.8 MiB |  |  | 1.30 |  |
| registration + Synchronize, 100000 containers | median | FAIL | 5175.7 ms |  |  | — | upstream failed |

WASM plugins (in-process; same module on both runtimes unless the scenario says otherwise):

| scenario | metric | upstream | nrikit | upstream/floor | nrikit/floor | nrikit/upstream | note |
|---|---|---:|---:|---:|---:|---:|---|
| CreateContainer, 1 WASM plugin | p50 | 500 µs | 600 µs | 1.90 | 2.30 | 1.20 |  |
PASS
`

const current = `
| scenario | metric | upstream | nrikit | upstream/floor | nrikit/floor | nrikit/upstream | note |
|---|---|---:|---:|---:|---:|---:|---|
| CreateContainer, 1 plugin(s) | p50 | 250 µs (240–300) | 150 µs (140–160) | 1.24 | 0.84 | 0.60 (0.55–0.62) |  |
| CreateContainer, 1 plugin(s) | throughput, 8 callers | 2943/s (2900–3000) | 4401/s | | | 1.50 |  |
| plugin process (1 plugin, after the CreateContainer runs) | VmRSS | 12.9 MiB | 12.0 MiB (11.9–12.1) |  |  | 0.93 |  |
| registration + Synchronize, 100000 containers | median | FAIL | 1900.0 ms (1800.0–FAIL) |  |  | — |  |
`

func TestParse(t *testing.T) {
	rows, err := Parse(strings.NewReader(old + current))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8: %+v", len(rows), rows)
	}
	want := []Row{
		{Key{"", "CreateContainer, 1 plugin(s)", "p50"}, 300, 200, "µs"},
		{Key{"", "plugin process (1 plugin, after the CreateContainer runs)", "VmRSS"}, 12.9, 16.8, "MiB"},
		{Key{"", "registration + Synchronize, 100000 containers", "median"}, math.Inf(1), 5175.7, "ms"},
		{Key{"WASM plugins (in-process; same module on both runtimes unless the scenario says otherwise)", "CreateContainer, 1 WASM plugin", "p50"}, 500, 600, "µs"},
		{Key{"", "CreateContainer, 1 plugin(s)", "p50"}, 250, 150, "µs"},
		{Key{"", "CreateContainer, 1 plugin(s)", "throughput, 8 callers"}, 2943, 4401, "/s"},
		{Key{"", "plugin process (1 plugin, after the CreateContainer runs)", "VmRSS"}, 12.9, 12.0, "MiB"},
		{Key{"", "registration + Synchronize, 100000 containers", "median"}, math.Inf(1), 1900, "ms"},
	}
	for i, w := range want {
		if rows[i] != w {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], w)
		}
	}
	if _, err := Parse(strings.NewReader(current[:strings.Index(current, "|---|")] + "|---|\n| a | b | twelve µs | 1 |\n")); err == nil {
		t.Error("Parse accepted a figure that is not a number")
	}
}

// TestParseLabelledSection checks a section whose figure columns are two
// nrikit configurations (the policy section) is read like the others:
// the left column as Up, the right one as Ours.
func TestParseLabelledSection(t *testing.T) {
	const in = `
Policy enforcement (nrikit only):

| scenario | metric | nrikit, no policy | nrikit, policy | nrikit, no policy/floor | nrikit, policy/floor | nrikit, policy/nrikit, no policy | note |
|---|---|---:|---:|---:|---:|---:|---|
| CreateContainer, 1 plugin(s) | p50 | 138 µs (122–145) | 139 µs (125–153) | 0.79 | 0.80 | 1.03 (0.86–1.26) |  |
`
	rows, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Row{Key{"Policy enforcement (nrikit only)", "CreateContainer, 1 plugin(s)", "p50"}, 138, 139, "µs"}
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("Parse = %+v, want [%+v]", rows, want)
	}
}

func TestCompare(t *testing.T) {
	k := Key{"", "CreateContainer, 1 plugin(s)", "p50"}
	m := Key{"", "plugin process", "VmRSS"}
	run := func(up, ours float64, more ...Row) []Row {
		return append([]Row{{k, up, ours, "µs"}}, more...)
	}
	before := [][]Row{run(300, 210), run(330, 200, Row{m, 12.9, 16.8, "MiB"}), run(280, 240)}
	after := [][]Row{run(300, 150), run(280, 140), run(400, 160)}
	cs := Compare(before, after)
	if len(cs) != 2 || cs[0].Key != k || cs[1].Key != m {
		t.Fatalf("Compare = %+v, want the rows %v and %v in the first run's order", cs, k, m)
	}
	c := cs[0]
	if c.Before.Median != 210 || c.After.Median != 150 || c.Before.Min != 200 || c.After.Max != 160 {
		t.Errorf("before %+v, after %+v, want medians 210 and 150", c.Before, c.After)
	}
	if r := c.Ratio(); math.Abs(r-150.0/210) > 1e-9 {
		t.Errorf("after/before = %v, want %v", r, 150.0/210)
	}
	// Per run: 0.70, 0.61, 0.86 before; 0.50, 0.50, 0.40 after.
	if v := c.VsUpBefore.Median; math.Abs(v-0.7) > 1e-9 {
		t.Errorf("nrikit/upstream before = %v, want 0.70", v)
	}
	if v := c.VsUpAfter.Median; math.Abs(v-0.5) > 1e-9 {
		t.Errorf("nrikit/upstream after = %v, want 0.50", v)
	}
	if mem := cs[1]; mem.Before.N != 1 || mem.Before.Median != 16.8 || mem.After.N != 0 || !math.IsNaN(mem.Ratio()) {
		t.Errorf("row of one run only: %+v", mem)
	}

	var out strings.Builder
	Print(&out, cs, "abc123", "def456")
	s := out.String()
	for _, want := range []string{
		"before (abc123) and after (def456)",
		"|  | CreateContainer, 1 plugin(s) | p50 | 210 µs (200–240) | 150 µs (140–160) | 0.71 | 0.70 (0.61–0.86) | 0.50 (0.40–0.50) |",
		"|  | plugin process | VmRSS | 16.8 MiB | — | — | 1.30 | — |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("comparison lacks %q:\n%s", want, s)
		}
	}
}
