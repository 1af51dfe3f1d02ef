package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/adaptation"
	nriapi "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/benchpolicy"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"github.com/nrikit/nrikit/policy"
)

// The policy section of BenchmarkNRI (issue 25): the cost of enforcing an
// administrator's policy of plugin grants (adaptation.WithPolicy) on
// CreateContainer, nrikit with a policy of 20 grants next to nrikit
// without one. Upstream has no policy, so both columns of this section
// are nrikit's: the left one (the table's baseline column) without a
// policy, the right one with it.

// policySection is the heading of the section of the table.
const policySection = "Policy enforcement (issue 25; nrikit only, upstream has no policy: both columns are nrikit)"

// policyColumns are the labels of the section's two figure columns.
var policyColumns = [2]string{"nrikit, no policy", "nrikit, policy of 20 grants"}

// benchPolicy compiles the policy of 20 grants of the benchmarks of
// enforcement (benchpolicy.Doc), whose grant of the env* plugins allows
// their BENCH_* variables.
func benchPolicy(tb testing.TB) *policy.Policy {
	tb.Helper()
	p, err := policy.Parse("bench-policy.yaml", []byte(benchpolicy.Doc("BENCH_*", "OTHER_*")))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// benchPolicies runs the policy scenarios of BenchmarkNRI:
// CreateContainer through 1 and 16 plugins, nrikit without and with
// benchPolicy, interleaved in rounds as upstream and nrikit are elsewhere.
func benchPolicies(b *testing.B, t *table, rounds int) {
	prev := t.section
	t.section = policySection
	t.columns(policySection, policyColumns)
	defer func() { t.section = prev }()

	// column is the table column of each configuration: "upstream" is
	// the baseline column, labelled policyColumns[0] in this section.
	none, with := nrikitImpl(), nrikitImpl(adaptation.WithPolicy(benchPolicy(b)))
	none.name = "upstream"
	confs := []impl{none, with}
	tag := map[string]string{none.name: "policy=none", with.name: "policy=20-grants"}

	for _, n := range []int{1, 16} {
		scen := fmt.Sprintf("CreateContainer, %d plugin(s), without and with a policy of 20 grants", n)
		for _, c := range interleave(t, rounds, confs) {
			name := fmt.Sprintf("Policy/CreateContainer/plugins=%d/%s", n, tag[c.name])
			if !selected(b, name) {
				continue
			}
			// A refused answer would fail benchCreate (its plugin's
			// variable missing from the merged adjustment).
			r, dir := startRuntime(b, c, envPlugins(n))
			b.Run(t.inRound(name), func(b *testing.B) {
				m := startCPU(dir, envPlugins(n))
				s := benchCreate(b, r, n, 1, m.restart) // fails unless all n variables are merged
				recordCPU(b, t, c.name, scen, m)
				t.record(b, c.name, scen, "p50", micros, ns(s.p50))
				t.record(b, c.name, scen, "p99", micros, ns(s.p99))
				t.record(b, c.name, scen, "allocs/call", count, s.allocs)
			})
			stopRuntime(b, r)
		}
	}
}

// TestBenchPolicyAllowsThePlugins checks the benchmark's policy has 20
// grants and allows the harness's plugins their answers (one BENCH_*
// variable), so that the policy rows measure the check and not a
// refusal, and that it is enforced: the same answer from a plugin of
// another name, or another variable, is refused.
func TestBenchPolicyAllowsThePlugins(t *testing.T) {
	p := benchPolicy(t)
	if n := len(p.Grants()); n != 20+1 { // then the (implicit) default grant
		t.Errorf("the policy has %d grants, want 20 and the default", n)
	}
	req := workload.CreateRequest(0)
	pod, ctr := req.GetPod(), req.GetContainer()
	answer := func(key string) *nriapi.ContainerAdjustment {
		adj := &nriapi.ContainerAdjustment{}
		adj.AddEnv(key, "1")
		return adj
	}
	for _, p16 := range envPlugins(16) {
		idx, name, _ := strings.Cut(p16.full, "-")
		if vs := p.GrantFor(idx, name).CheckAdjustment(pod, ctr, answer(p16.cfg.EnvKey)); vs != nil {
			t.Errorf("%s's answer is refused: %v", p16.full, vs)
		}
	}
	if vs := p.GrantFor("10", "stranger").CheckAdjustment(pod, ctr, answer("BENCH_0")); vs == nil {
		t.Error("a plugin without a grant may set BENCH_0")
	}
	if vs := p.GrantFor("10", "env0").CheckAdjustment(pod, ctr, answer("PATH")); vs == nil {
		t.Error("env0 may set PATH")
	}
}

// TestColumnsLabelASection checks a section's column labels head its
// table and its ratio columns, and leave the other tables' alone.
func TestColumnsLabelASection(t *testing.T) {
	tb := newTable()
	tb.row("main", "p50", micros).set("nrikit", 0, 1000)
	tb.section = "Policy"
	tb.columns("Policy", [2]string{"no policy", "policy"})
	tb.row("pol", "p50", micros).set("upstream", 0, 1000)
	tb.row("pol", "p50", micros).set("nrikit", 0, 1100)
	var out strings.Builder
	tb.print(&out)
	s := out.String()
	for _, want := range []string{
		"| scenario | metric | upstream | nrikit | upstream/floor | nrikit/floor | nrikit/upstream | note |",
		"| scenario | metric | no policy | policy | no policy/floor | policy/floor | policy/no policy | note |",
		"| pol | p50 | 1 µs | 1 µs | — | — | 1.10 |  |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

// TestOnlySectionPrintsAlone checks a run of one section's rows (as
// `BENCH=...Policy`) prints that section's table without an empty main
// table before it.
func TestOnlySectionPrintsAlone(t *testing.T) {
	tb := newTable()
	tb.section = policySection
	tb.columns(policySection, policyColumns)
	tb.row("pol", "p50", micros).set("nrikit", 0, 1000)
	var out strings.Builder
	tb.print(&out)
	s := out.String()
	if n := strings.Count(s, "| scenario |"); n != 1 || !strings.Contains(s, "| "+policyColumns[0]+" | "+policyColumns[1]+" |") {
		t.Errorf("want the policy section's table alone:\n%s", s)
	}
}
