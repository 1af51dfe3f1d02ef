package compatstub

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/stub/stubtest"

	"github.com/nrikit/nrikit/interop/internal/consumer"
)

// launched is how a runtime launches the plugin: its name and index in
// the environment.
var launched = []string{"NRI_PLUGIN_NAME=compatstub", "NRI_PLUGIN_IDX=10"}

// endings are the ways the runtime ends a connection.
var endings = []struct {
	name     string
	shutdown bool
}{{"lost", false}, {"shutdown", true}}

// TestOnCloseHookExits: a plugin whose OnClose hook exits the process
// with 0 (nri-plugins' memory-qos, resctrl-mon and memtierd do) and which
// exits with an error when Run returns an error. Upstream's stub calls
// the hook on the ttrpc client's goroutine while Run returns on the
// plugin's: which exit wins is a race, which the hook usually wins.
// compat's Run returns only after the hook has returned, so the hook
// wins every time: the plugin exits 0 in each of runs.
func TestOnCloseHookExits(t *testing.T) {
	const runs = 10
	for _, e := range endings {
		t.Run(e.name, func(t *testing.T) {
			for _, f := range consumer.Flavors {
				codes := map[int]int{}
				for range runs {
					rt := stubtest.NewRuntime(t)
					p := start(t, rt, f, launch{env: launched, args: []string{"-hook", "exit"}})
					if !p.registered(t) {
						t.Fatalf("%s: plugin exited before registering: %v", f, p.wait(t).lines)
					}
					p.end(t, e.shutdown)
					o := p.wait(t)
					codes[o.code]++
					if f == consumer.Compat && (o.code != 0 || o.has("run-returned")) {
						t.Errorf("compat: exit code %d, report %q: want the hook to exit 0 before Run returns", o.code, o.lines)
					}
				}
				t.Logf("%s: exit codes of %d runs: %v", f, runs, codes)
			}
		})
	}
}

// TestOnCloseHookAndRunError: when the runtime shuts the plugin down or
// the connection is lost, both builds call the hook and return the same
// error from Run (upstream's "ttrpc: server closed"); compat calls the
// hook before Run returns.
func TestOnCloseHookAndRunError(t *testing.T) {
	for _, e := range endings {
		t.Run(e.name, func(t *testing.T) {
			got := map[consumer.Flavor]outcome{}
			for _, f := range consumer.Flavors {
				rt := stubtest.NewRuntime(t)
				p := start(t, rt, f, launch{env: launched, args: []string{"-hook", "report", "-linger", "200ms"}})
				if !p.registered(t) {
					t.Fatalf("%s: plugin exited before registering: %v", f, p.wait(t).lines)
				}
				p.end(t, e.shutdown)
				got[f] = p.wait(t)
			}
			up, cp := got[consumer.Upstream], got[consumer.Compat]
			if !up.has("hook") || !cp.has("hook") {
				t.Errorf("hook called: upstream %v, compat %v; want both", up.has("hook"), cp.has("hook"))
			}
			if u, c := up.value("run-returned: "), cp.value("run-returned: "); u != c || u == "" {
				t.Errorf("Run returned %q on upstream, %q on compat", u, c)
			}
			if up.code != cp.code {
				t.Errorf("exit code %d on upstream, %d on compat", up.code, cp.code)
			}
			if h, r := cp.index("hook"), cp.index("run-returned"); h < 0 || h > r {
				t.Errorf("compat: the hook ran after Run returned: %q", cp.lines)
			}
			t.Logf("upstream: %q; compat: %q", up.lines, cp.lines)
		})
	}
}

// TestIdentity: the name and index a plugin registers with, or New's
// failure, from the environment a runtime launches it with and the
// options it gives, are the same on both builds: upstream v0.12.5 takes
// the environment's, lets WithPluginName override the name, fails
// WithPluginIdx when the index is set, and takes what is missing from the
// executable's name.
func TestIdentity(t *testing.T) {
	for _, c := range []launch{
		{env: launched},
		{env: launched, args: []string{"-name", "other"}},
		{env: launched, args: []string{"-idx", "20"}},
		{env: launched, args: []string{"-name", "other", "-idx", "20"}},
		{args: []string{"-name", "other", "-idx", "20"}},
		{args: []string{"-idx", "20"}},
		{args: []string{"-name", "other"}},
		{env: []string{"NRI_PLUGIN_NAME=compatstub"}, args: []string{"-idx", "30"}},
		{env: []string{"NRI_PLUGIN_IDX=40"}},
	} {
		t.Run(fmt.Sprint(c.env, c.args), func(t *testing.T) {
			got := map[consumer.Flavor]string{}
			for _, f := range consumer.Flavors {
				rt := stubtest.NewRuntime(t)
				p := start(t, rt, f, c)
				if !p.registered(t) {
					o := p.wait(t)
					if !o.has("new-error: ") {
						t.Fatalf("%s: plugin exited without registering or failing New: %q", f, o.lines)
					}
					got[f] = "New failed"
					t.Logf("%s: %s", f, o.value("new-error: "))
					continue
				}
				got[f] = "registered as " + p.conn.Name()
				p.end(t, true)
				p.wait(t)
			}
			if got[consumer.Upstream] != got[consumer.Compat] {
				t.Errorf("upstream: %s; compat: %s", got[consumer.Upstream], got[consumer.Compat])
			}
		})
	}
}

// TestUpdateBeforeStart: UpdateContainers on a stub not started fails
// with the same error (upstream's ErrNoService).
func TestUpdateBeforeStart(t *testing.T) {
	got := map[consumer.Flavor][]string{}
	for _, f := range consumer.Flavors {
		rt := stubtest.NewRuntime(t)
		p := start(t, rt, f, launch{env: launched})
		if !p.registered(t) {
			t.Fatalf("%s: plugin exited before registering: %v", f, p.wait(t).lines)
		}
		p.end(t, true)
		o := p.wait(t)
		got[f] = []string{o.value("update-error: ")}
	}
	if !slices.Equal(got[consumer.Upstream], got[consumer.Compat]) || got[consumer.Upstream][0] == "" {
		t.Errorf("UpdateContainers before Start failed with %q on upstream, %q on compat", got[consumer.Upstream], got[consumer.Compat])
	}
}
