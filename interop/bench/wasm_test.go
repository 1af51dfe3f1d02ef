package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	upadapt "github.com/containerd/nri/pkg/adaptation"
	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/nrirt"
	"github.com/nrikit/nrikit/interop/bench/internal/uprt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// The WASM section of BenchmarkNRI (issue 18): the same work as the
// process plugins (one environment variable added in CreateContainer),
// done by WebAssembly modules that both runtimes load in-process from
// their plugin directory. The headline rows run the SAME module, built
// with nrikit's stub/wasmguest, on both runtimes (the two guest kinds are
// ABI compatible); one more row runs the guest built with upstream's glue
// on both.

// wasmSection is the heading of the section of the table.
const wasmSection = "WASM plugins (in-process; same module on both runtimes unless the scenario says otherwise)"

// wasmMemoryCalls is how many CreateContainer and PostStartContainer
// requests a memory process sends before reading its memory.
const wasmMemoryCalls = 100

// wasmPluginDir installs n plugins, hard links of module (IDX-NAME, the
// same bytes, so nrikit compiles it once), each configured with the
// variable it adds (IDX-NAME.conf, KEY=VALUE as the guests read it, in a
// configuration directory of its own). It returns the plugin and
// configuration directories.
func wasmPluginDir(tb testing.TB, module string, n int) (plugins, conf string) {
	tb.Helper()
	plugins, conf = tb.TempDir(), tb.TempDir()
	for i, p := range envPlugins(n) {
		full := fmt.Sprintf("%02d-wasm%d", 10+i, i)
		if err := os.Link(module, filepath.Join(plugins, full)); err != nil {
			tb.Fatal(err)
		}
		cfg := p.cfg.EnvKey + "=" + p.cfg.EnvValue
		if err := os.WriteFile(filepath.Join(conf, full+".conf"), []byte(cfg), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return plugins, conf
}

// startWASM starts im in this process with n WASM plugins of module and
// checks they all registered.
func startWASM(tb testing.TB, im impl, module string, n int) rt {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	dir, conf := wasmPluginDir(tb, module, n)
	var (
		r   rt
		err error
	)
	if im.name == "upstream" {
		r, err = uprt.Start(ctx, dir, nil, nil, upadapt.WithPluginConfigPath(conf))
	} else {
		r, err = nrirt.Start(ctx, dir, nil, nil, adaptation.WithConfigDir(conf))
	}
	if err != nil {
		tb.Fatalf("%s: %v", im.name, err)
	}
	if got := r.Plugins(); got != n {
		r.Stop(ctx)
		tb.Fatalf("%s: %d WASM plugins registered, want %d", im.name, got, n)
	}
	return r
}

// childRun is what a runtime process reported, and the CPU time (user
// and system) it used over its whole life.
type childRun struct {
	memrun.Result
	CPU time.Duration
}

// runRuntime runs im's runtime binary (bench/runtimes) with s, sending n
// requests of each kind, and returns what it printed.
func runRuntime(ctx context.Context, im impl, s memrun.Setup, n, want int) (childRun, error) {
	bin := bins.nrikitRuntime
	if im.name == "upstream" {
		bin = bins.upstreamRuntime
	}
	args := []string{"-plugins", s.PluginDir, "-n", strconv.Itoa(n), "-want", strconv.Itoa(want)}
	if s.ConfigDir != "" {
		args = append(args, "-config", s.ConfigDir)
	}
	if s.WASMCacheDir != "" {
		args = append(args, "-wasm-cache", s.WASMCacheDir)
	}
	if s.Existing > 0 {
		args = append(args, "-existing", strconv.Itoa(s.Existing))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return childRun{}, fmt.Errorf("%s runtime: %w", im.name, err)
	}
	res, err := memrun.Parse(string(out))
	if err != nil {
		return childRun{}, fmt.Errorf("%s runtime: %w", im.name, err)
	}
	return childRun{Result: res, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

// benchWASM runs the WASM scenarios of BenchmarkNRI.
func benchWASM(b *testing.B, t *table, impls []impl, rounds int) {
	prev := t.section
	t.section = wasmSection
	defer func() { t.section = prev }()

	type guest struct{ tag, module, scen string }
	for _, c := range []struct {
		n int
		g guest
	}{
		{1, guest{"", bins.wasmNrikit, "CreateContainer, 1 WASM plugin"}},
		{16, guest{"", bins.wasmNrikit, "CreateContainer, 16 WASM plugins"}},
		{1, guest{",guest=upstream", bins.wasmUpstream, "CreateContainer, 1 WASM plugin, guest built with upstream's glue"}},
	} {
		for _, im := range interleave(t, rounds, impls) {
			name := fmt.Sprintf("WASM/CreateContainer/plugins=%d%s/%s", c.n, c.g.tag, im.name)
			if !selected(b, name) {
				continue
			}
			r := startWASM(b, im, c.g.module, c.n)
			b.Run(t.inRound(name), func(b *testing.B) {
				var cpu0 time.Duration
				s := benchCreate(b, r, c.n, 1, func() { cpu0 = workload.SelfCPUTime() })
				t.record(b, im.name, c.g.scen, "p50", micros, ns(s.p50))
				t.record(b, im.name, c.g.scen, "p99", micros, ns(s.p99))
				t.record(b, im.name, c.g.scen, "allocs/call", count, s.allocs)
				t.record(b, im.name, c.g.scen, "CPU/call, runtime with its plugins", cpu,
					ns((workload.SelfCPUTime()-cpu0)/time.Duration(max(b.N, 1))))
			})
			stopRuntime(b, r)
		}
	}

	benchWASMLoad(b, t, impls, rounds)
	benchWASMMemory(b, t, impls, rounds)
}

// benchWASMLoad measures, in new runtime processes, how long Start takes
// to return with one WASM plugin synchronized: nrikit with an empty
// compilation cache and with the cache a previous process filled,
// upstream (which has no cache) for comparison with both. The runs of
// the three kinds alternate, so that a change in the machine's load
// affects them alike, one process of each kind per round; the CPU time of
// the processes is reported too, as it depends less on that load.
func benchWASMLoad(b *testing.B, t *table, impls []impl, rounds int) {
	if !selected(b, "WASM/Load") {
		return
	}
	var up, ours impl
	for _, im := range impls {
		if im.name == "upstream" {
			up = im
		} else {
			ours = im
		}
	}
	b.Run("WASM/Load", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		dir, conf := wasmPluginDir(b, bins.wasmNrikit, 1)
		cache := filepath.Join(b.TempDir(), "cache")
		if _, err := runRuntime(ctx, ours, memrun.Setup{PluginDir: dir, ConfigDir: conf, WASMCacheDir: cache}, 1, 1); err != nil {
			b.Fatal(err) // fills the cache
		}
		kinds := []struct {
			im    impl
			cache func() string
			took  []time.Duration
			cpu   []time.Duration
		}{
			{im: up, cache: func() string { return "" }},
			{im: ours, cache: func() string { return filepath.Join(b.TempDir(), "cache") }},
			{im: ours, cache: func() string { return cache }},
		}
		const cold, warm = "Start with 1 WASM plugin, empty compilation cache", "Start with 1 WASM plugin, cache filled by an earlier process"
		eachRound(t, rounds, func() {
			for i, scen := range []string{cold, cold, warm} {
				k := &kinds[i]
				res, err := runRuntime(ctx, k.im, memrun.Setup{PluginDir: dir, ConfigDir: conf, WASMCacheDir: k.cache()}, 1, 1)
				if err != nil {
					b.Fatal(err)
				}
				k.took, k.cpu = append(k.took, res.Start), append(k.cpu, res.CPU)
				t.record(b, k.im.name, scen, "median", millis, ns(res.Start))
				t.record(b, k.im.name, scen, "process CPU time (Start + 1 request)", millis, ns(res.CPU))
			}
		})
		med := func(d []time.Duration) float64 {
			s := slices.Clone(d)
			slices.Sort(s)
			return ns(s[len(s)/2])
		}
		for i, scen := range []string{cold, cold, warm} {
			b.Logf("%s, %s: Start %v, process CPU %v", kinds[i].im.name, scen, kinds[i].took, kinds[i].cpu)
		}
		for _, m := range []string{"median", "process CPU time (Start + 1 request)"} {
			r := t.row(warm, m, millis)
			r.up = slices.Clone(t.row(cold, m, millis).up)
		}
		t.row(warm, "median", millis).note = "upstream has no compilation cache: its figures are its cold start's"
		b.ReportMetric(med(kinds[0].took)/1e6, "upstream-start-ms")
		b.ReportMetric(med(kinds[1].took)/1e6, "cold-start-ms")
		b.ReportMetric(med(kinds[2].took)/1e6, "cached-start-ms")
		for b.Loop() { // the figures are the child processes'
		}
	})
}

// benchWASMMemory measures the resident memory of runtime processes with
// 0, 1 and 16 WASM plugins of the same module (no compilation cache
// directory, the default), after wasmMemoryCalls requests of each kind,
// and derives what each loaded plugin costs. The processes' Start times
// are reported too.
func benchWASMMemory(b *testing.B, t *table, impls []impl, rounds int) {
	for _, im := range interleave(t, rounds, impls) {
		name := "WASM/Memory/" + im.name
		if !selected(b, name) {
			continue
		}
		b.Run(t.inRound(name), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			res := map[int]memrun.Result{}
			for _, n := range []int{0, 1, 16} {
				dir, conf := wasmPluginDir(b, bins.wasmNrikit, n)
				r, err := runRuntime(ctx, im, memrun.Setup{PluginDir: dir, ConfigDir: conf}, wasmMemoryCalls, n)
				if err != nil {
					b.Fatal(err)
				}
				res[n] = r.Result
				setWASMMem(t, im.name, fmt.Sprintf("runtime process, %d WASM plugin(s), %d CreateContainer + PostStartContainer", n, wasmMemoryCalls), r.Result)
				b.ReportMetric(float64(r.Memory.RSSKiB), fmt.Sprintf("VmRSS-KiB/plugins=%d", n))
				if n == 16 {
					t.record(b, im.name, "Start with 16 WASM plugins, no compilation cache directory", "time", millis, ns(r.Start))
				}
			}
			diff := func(more, less memrun.Result, per int64) memrun.Result {
				return memrun.Result{
					Memory: workload.Memory{RSSKiB: (more.Memory.RSSKiB - less.Memory.RSSKiB) / per,
						HWMKiB: (more.Memory.HWMKiB - less.Memory.HWMKiB) / per},
					SettledRSSKiB: (more.SettledRSSKiB - less.SettledRSSKiB) / per,
				}
			}
			setWASMMem(t, im.name, "increment: the first WASM plugin (1 vs 0)", diff(res[1], res[0], 1))
			setWASMMem(t, im.name, "increment: each further plugin of the same module ((16 − 1)/15)", diff(res[16], res[1], 15))
			for b.Loop() { // the figures are the child processes'
			}
		})
	}
}

// setWASMMem records a runtime process's memory as VmRSS, VmHWM and the
// settled VmRSS.
func setWASMMem(t *table, im, scen string, r memrun.Result) {
	setMem(t, im, scen, r.Memory)
	t.set(im, scen, "VmRSS after GC + FreeOSMemory", kib, float64(r.SettledRSSKiB))
}

// TestWASMPluginDir checks the WASM plugin directory: n links of one
// module (the same bytes, so nrikit compiles it once), executable for
// upstream's discovery, each with the configuration the guests read.
func TestWASMPluginDir(t *testing.T) {
	module := filepath.Join(t.TempDir(), "guest.wasm")
	if err := os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, conf := wasmPluginDir(t, module, 16)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 16 {
		t.Fatalf("%d files in the plugin directory, want 16", len(entries))
	}
	want, err := os.Stat(module)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(info, want) || info.Mode()&0o111 == 0 {
			t.Errorf("%s is not an executable link of the module (%v)", e.Name(), info.Mode())
		}
		cfg, err := os.ReadFile(filepath.Join(conf, e.Name()+".conf"))
		if err != nil {
			t.Fatal(err)
		}
		if w := fmt.Sprintf("BENCH_%d=%d", i, i); string(cfg) != w {
			t.Errorf("%s is configured with %q, want %q", e.Name(), cfg, w)
		}
	}
}

// TestRuntimeOutputParses checks what a runtime process prints is what
// runRuntime reads.
func TestRuntimeOutputParses(t *testing.T) {
	want := memrun.Result{Memory: workload.Memory{RSSKiB: 123456, HWMKiB: 234567}, SettledRSSKiB: 100000, Start: 1500 * time.Millisecond}
	got, err := memrun.Parse(fmt.Sprintf("%s\nsettled-rss-kib=%d\nstart-ns=%d\n", want.Memory, want.SettledRSSKiB, want.Start.Nanoseconds()))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Parse = %+v, want %+v", got, want)
	}
	if _, err := memrun.Parse(want.Memory.String()); err == nil {
		t.Error("Parse accepted output without the start time")
	}
}

// TestSectionsPrintApart checks rows of a section are printed in a table
// of their own, after the main table.
func TestSectionsPrintApart(t *testing.T) {
	tb := newTable()
	tb.row("main", "p50", micros).set("nrikit", 0, 1000)
	tb.section = "WASM"
	tb.row("wasm", "p50", micros).set("nrikit", 0, 2000)
	tb.section = ""
	tb.row("main too", "p50", micros).set("nrikit", 0, 3000)
	var out strings.Builder
	tb.print(&out)
	s := out.String()
	main, wasm, heading := strings.Index(s, "| main too |"), strings.Index(s, "| wasm |"), strings.Index(s, "WASM:")
	if main < 0 || wasm < 0 || heading < 0 || !(main < heading && heading < wasm) {
		t.Errorf("the section is not a table of its own after the main one:\n%s", s)
	}
	if n := strings.Count(s, "| scenario |"); n != 2 {
		t.Errorf("%d table headers, want 2:\n%s", n, s)
	}
}
