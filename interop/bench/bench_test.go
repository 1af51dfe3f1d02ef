package bench

import (
	"context"
	"fmt"
	"iter"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	nriapi "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/pluginproc"
	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"google.golang.org/protobuf/proto"
)

// BenchmarkNRI runs every scenario in rounds (see benchRounds), each
// round upstream and then nrikit, and prints the table of
// docs/benchmarks.md at the end: per figure the median of the rounds and
// their range, per ratio the median of the per-round ratios.
// Sub-benchmarks can be selected with -bench (the floors are needed for
// the ratios to them); a sub-benchmark's name repeats in every round (the
// testing package suffixes #01, #02, ...).
func BenchmarkNRI(b *testing.B) {
	t := newTable()
	impls := []impl{upstreamImpl(), nrikitImpl()}
	rounds := benchRounds()

	// (A benchmark run once only to look for sub-benchmarks has b.N == 1.)
	eachRound(t, rounds, func() {
		b.Run(t.inRound("floor=ttrpc"), func(b *testing.B) {
			if s, rtCPU, plCPU := benchFloor(b, false); b.N > 1 {
				t.setFloor(&t.floor, ns(s.p50))
				t.setFloor(&t.floorCPU[0], ns(rtCPU))
				t.setFloor(&t.floorCPU[1], ns(plCPU))
			}
		})
		b.Run(t.inRound("floor=ttrpc+mux"), func(b *testing.B) {
			if s, _, _ := benchFloor(b, true); b.N > 1 {
				t.setFloor(&t.floorMux, ns(s.p50))
			}
		})
	})

	for _, n := range []int{1, 4, 16} {
		scen := fmt.Sprintf("CreateContainer, %d plugin(s)", n)
		for _, im := range interleave(t, rounds, impls) {
			if !selected(b, fmt.Sprintf("CreateContainer/plugins=%d/%s", n, im.name),
				fmt.Sprintf("CreateContainer8/plugins=%d/%s", n, im.name),
				fmt.Sprintf("PostStartContainer/plugins=%d/%s", n, im.name)) {
				continue
			}
			r, dir := startRuntime(b, im, envPlugins(n))
			b.Run(t.inRound(fmt.Sprintf("CreateContainer/plugins=%d/%s", n, im.name)), func(b *testing.B) {
				m := startCPU(dir, envPlugins(n))
				s := benchCreate(b, r, n, 1, m.restart)
				recordCPU(b, t, im.name, scen, m)
				t.record(b, im.name, scen, "p50", micros, ns(s.p50))
				t.record(b, im.name, scen, "p99", micros, ns(s.p99))
				t.record(b, im.name, scen, "allocs/call", count, s.allocs)
			})
			b.Run(t.inRound(fmt.Sprintf("CreateContainer8/plugins=%d/%s", n, im.name)), func(b *testing.B) {
				s := benchCreate(b, r, n, 8)
				b.ReportMetric(s.perSec, "calls/s")
				t.record(b, im.name, scen, "throughput, 8 callers", perSec, s.perSec)
				t.record(b, im.name, scen, "p50, 8 callers", micros, ns(s.p50))
			})
			if n == 16 {
				b.Run(t.inRound(fmt.Sprintf("PostStartContainer/plugins=%d/%s", n, im.name)), func(b *testing.B) {
					m := startCPU(dir, envPlugins(n))
					s := measure(b, func(ctx context.Context, _ int) error { return r.PostStart(ctx) })
					recordCPU(b, t, im.name, "PostStartContainer, 16 plugins", m)
					t.record(b, im.name, "PostStartContainer, 16 plugins", "p50", micros, ns(s.p50))
					t.record(b, im.name, "PostStartContainer, 16 plugins", "p99", micros, ns(s.p99))
				})
			}
			if n == 1 {
				if pid, err := pluginPID(dir, envPlugins(1)[0].full); err != nil {
					b.Error(err)
				} else if m, err := workload.ReadMemory(pid); err != nil {
					b.Error(err)
				} else {
					const scen = "plugin process (1 plugin, after the CreateContainer runs)"
					setMem(t, im.name, scen, m)
					t.set(im.name, scen, "RssAnon (heap, stacks)", kib, float64(m.AnonKiB))
					t.set(im.name, scen, "RssFile (executable's pages touched)", kib, float64(m.FileKiB))
				}
			}
			stopRuntime(b, r)
		}
	}

	for _, im := range interleave(t, rounds, impls) {
		name := "CreateContainerScoped/plugins=16/" + im.name
		if !selected(b, name) {
			continue
		}
		r, _ := startRuntime(b, im, scopedPlugins(16))
		b.Run(t.inRound(name), func(b *testing.B) {
			var envs int
			s := measure(b, func(ctx context.Context, i int) error {
				var err error
				envs, err = r.Create(ctx, i)
				return err
			}, prepare(r))
			scen := "CreateContainer, 16 plugins, scope matches 1"
			t.record(b, im.name, scen, "p50", micros, ns(s.p50))
			t.record(b, im.name, scen, "p99", micros, ns(s.p99))
			note := "upstream: plugins filter in their handler; nrikit: "
			if envs == 1 {
				note += "runtime-side scope filter effective (1 plugin called)"
			} else {
				note += fmt.Sprintf("runtime-side scope filter NOT effective (%d plugins adjusted)", envs)
			}
			if im.name == "nrikit" {
				t.row(scen, "p50", micros).note = note
			}
		})
		stopRuntime(b, r)
	}

	for _, n := range []int{1000, 10000, 100000} {
		if !selected(b, fmt.Sprintf("Synchronize/containers=%d/upstream", n), fmt.Sprintf("Synchronize/containers=%d/nrikit", n)) {
			continue
		}
		l := newListing(n)
		for _, im := range interleave(t, rounds, impls) {
			b.Run(t.inRound(fmt.Sprintf("Synchronize/containers=%d/%s", n, im.name)), func(b *testing.B) {
				d, err := benchSync(b, im, l)
				v := ns(d)
				if err != nil {
					v = math.Inf(1)
					b.Logf("%s: Synchronize of %d containers failed: %v", im.name, n, err)
					t.row(fmt.Sprintf("registration + Synchronize, %d containers", n), "median", millis).note = im.name + " failed: " + err.Error()
				}
				t.record(b, im.name, fmt.Sprintf("registration + Synchronize, %d containers", n), "median", millis, v)
			})
		}
	}

	for _, n := range []int{10000, 100000} {
		for _, im := range interleave(t, rounds, impls) {
			name := fmt.Sprintf("Synchronize/memory/containers=%d/%s", n, im.name)
			if !selected(b, name) {
				continue
			}
			b.Run(t.inRound(name), func(b *testing.B) {
				rt, pl, err := syncMemory(b, im, n)
				for b.Loop() {
				}
				scen := fmt.Sprintf("registration + Synchronize, %d containers", n)
				if err != nil {
					b.Logf("%s: %v", im.name, err)
					t.row(scen, "peak VmHWM, runtime", kib).note = im.name + " failed: " + err.Error()
					return
				}
				b.ReportMetric(float64(rt.HWMKiB), "runtime-VmHWM-KiB")
				b.ReportMetric(float64(pl.HWMKiB), "plugin-VmHWM-KiB")
				t.set(im.name, scen, "peak VmHWM, runtime", kib, float64(rt.HWMKiB))
				t.set(im.name, scen, "peak VmHWM, plugin", kib, float64(pl.HWMKiB))
			})
		}
	}

	for _, im := range interleave(t, rounds, impls) {
		name := "Memory/runtime/plugins=16/" + im.name
		if !selected(b, name) {
			continue
		}
		b.Run(t.inRound(name), func(b *testing.B) {
			m, err := runtimeMemory(b, im)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
			}
			b.ReportMetric(float64(m.RSSKiB), "VmRSS-KiB")
			b.ReportMetric(float64(m.HWMKiB), "VmHWM-KiB")
			setMem(t, im.name, "runtime process, 16 plugins, 1000 CreateContainer + PostStartContainer", m)
		})
	}

	benchDay(b, t, impls, rounds)
	benchPolicies(b, t, rounds)
	benchRecording(b, t, impls, rounds)

	// Last: upstream's runtime never closes its WASM modules (its Stop
	// skips WASM plugins), so they stay in this process.
	benchWASM(b, t, impls, rounds)
	t.print(os.Stdout)
}

// eachRound runs f rounds times, with t.round set to the round.
func eachRound(t *table, rounds int, f func()) {
	for i := range rounds {
		t.round = i
		f()
	}
	t.round = 0
}

// interleave returns the implementations in the order a scenario runs
// them: rounds times impls (upstream, nrikit, upstream, nrikit, ...: ABAB),
// and sets t.round, as the returned sequence is iterated, to the round of
// each element.
func interleave(t *table, rounds int, impls []impl) iter.Seq2[int, impl] {
	return func(yield func(int, impl) bool) {
		defer func() { t.round = 0 }()
		for i := range rounds {
			for _, im := range impls {
				t.round = i
				if !yield(i, im) {
					return
				}
			}
		}
	}
}

// selected reports whether -bench selects any of the named
// sub-benchmarks of BenchmarkNRI, to skip their setup otherwise.
func selected(b *testing.B, names ...string) bool {
	pat := ""
	if f := flagValue("test.bench"); f != "" {
		pat = f
	}
	parts := splitPattern(pat)
	if len(parts) < 2 {
		return true
	}
	for _, name := range names {
		if matchParts(parts[1:], strings.Split(name, "/")) {
			return true
		}
	}
	return false
}

func setMem(t *table, im, scen string, m workload.Memory) {
	for _, f := range []struct {
		metric string
		v      int64
	}{{"VmRSS", m.RSSKiB}, {"VmHWM", m.HWMKiB}} {
		t.set(im, scen, f.metric, kib, float64(f.v))
	}
}

// prepare returns the setup of a CreateContainer loop: b.N fresh
// requests (upstream applies adjustments to the request it is given).
func prepare(r rt) func(n int) { return r.Prepare }

// benchCreate measures CreateContainer through r's n plugins with callers
// concurrent callers. begin, if given, is called once the requests are
// prepared, just before the calls: a CPU meter started there counts the
// calls, not the harness cloning b.N requests (15–19% of the bench
// process's CPU samples when it was counted).
func benchCreate(b *testing.B, r rt, n, callers int, begin ...func()) sample {
	call := func(ctx context.Context, i int) error {
		envs, err := r.Create(ctx, i)
		if err == nil && envs != n {
			err = fmt.Errorf("merged adjustment has %d variables, want %d", envs, n)
		}
		return err
	}
	prep := []func(int){prepare(r), func(int) {
		for _, f := range begin {
			f()
		}
	}}
	if callers == 1 {
		return measure(b, call, prep...)
	}
	return measureParallel(b, callers, call, prep...)
}

// benchSync measures the registration of one plugin, with Synchronize of
// l's containers, as the median time Start takes to return with the
// plugin synchronized.
func benchSync(b *testing.B, im impl, l *listing) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	dir := pluginDir(b, im.plugin, envPlugins(1))
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		r, err := im.start(ctx, dir, l)
		d := time.Since(start)
		if err != nil {
			for b.Loop() {
			}
			return 0, err
		}
		got := r.Plugins()
		var envs int
		if got == 1 {
			r.Prepare(1)
			envs, err = r.Create(ctx, 0)
		}
		r.Prepare(0)
		stopRuntime(b, r)
		switch {
		case got != 1:
			err = fmt.Errorf("plugin not registered after Start (%v)", d.Round(time.Millisecond))
		case err != nil || envs != 1:
			err = fmt.Errorf("synchronized plugin does not adjust: %d, %v", envs, err)
		}
		if err != nil {
			for b.Loop() { // the benchmark must run its course
			}
			return 0, err
		}
		took = append(took, d)
	}
	s := finish(b, took, 0, 0)
	return s.p50, nil
}

// syncMemory runs im's runtime binary with one plugin and n existing
// containers and returns the peak resident memory of the runtime during
// registration and Synchronize (the listing of the containers included,
// see memrun.Setup.Existing) and that of the plugin once it has the
// whole snapshot (pluginconf's peakfile).
func syncMemory(b *testing.B, im impl, n int) (runtime, plugin workload.Memory, err error) {
	specs := envPlugins(1)
	peak := filepath.Join(b.TempDir(), "peak")
	specs[0].cfg.PeakFile = peak
	dir := pluginDir(b, im.plugin, specs)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := runRuntime(ctx, im, memrun.Setup{PluginDir: dir, Existing: n}, 0, 1)
	if err != nil {
		return runtime, plugin, err
	}
	plugin, err = workload.ReadPeak(peak)
	return res.Memory, plugin, err
}

// runtimeMemory runs im's runtime binary with 16 plugins and returns the
// memory it reports.
func runtimeMemory(b *testing.B, im impl) (workload.Memory, error) {
	dir := pluginDir(b, im.plugin, envPlugins(16))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := runRuntime(ctx, im, memrun.Setup{PluginDir: dir}, 1000, 16)
	return res.Memory, err
}

// benchFloor measures the bare ttrpc CreateContainer round trip to a
// child process (optionally through the NRI multiplexer on both ends).
func benchFloor(b *testing.B, withMux bool) (s sample, clientCPU, serverCPU time.Duration) {
	sock := filepath.Join(b.TempDir(), "floor.sock")
	args := []string{"-floor", sock}
	if withMux {
		args = append(args, "-mux")
	}
	proc, _, err := pluginproc.Start(pluginproc.Spec{Path: bins.nrikitPlugin, Args: args, External: true,
		Lines: func(stream string, line []byte) {
			if stream == "stderr" {
				fmt.Fprintf(os.Stderr, "%s\n", line)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer proc.Kill()
	var conn net.Conn
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if conn, err = net.Dial("unix", sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // polling for the child's socket
	}
	cc := conn
	if withMux {
		m, err := mux.New(conn)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		if cc, err = m.Open(mux.PluginServiceConn); err != nil {
			b.Fatal(err)
		}
	}
	client := ttrpc.NewClient(cc)
	defer client.Close()
	svc := nriapi.NewPluginClient(client)
	tmpl := workload.CreateRequest(0)
	var reqs []*nriapi.CreateContainerRequest
	// The CPU meters start once the requests are cloned, as benchCreate's
	// do: the clones were a fifth of the client's CPU samples.
	var self0, child0 time.Duration
	defer func() {
		child1, _ := workload.CPUTime(proc.Pid())
		clientCPU = (workload.SelfCPUTime() - self0) / time.Duration(b.N)
		serverCPU = (child1 - child0) / time.Duration(b.N)
	}()
	return measure(b, func(ctx context.Context, i int) error {
		rsp, err := svc.CreateContainer(ctx, reqs[i])
		if err == nil && len(rsp.GetAdjust().GetEnv()) != 1 {
			err = fmt.Errorf("floor answered %v", rsp)
		}
		return err
	}, func(n int) {
		reqs = make([]*nriapi.CreateContainerRequest, n)
		for i := range reqs {
			reqs[i] = proto.Clone(tmpl).(*nriapi.CreateContainerRequest)
		}
		self0 = workload.SelfCPUTime()
		child0, _ = workload.CPUTime(proc.Pid())
	}), 0, 0
}

// recordCPU records the CPU time per call of the runtime and the plugins
// since m started, for the b.N calls just made.
func recordCPU(b *testing.B, t *table, im, scen string, m *cpuMeter) {
	rtCPU, plCPU := m.perCall(b.N)
	t.record(b, im, scen, "CPU/call, runtime", cpu, ns(rtCPU))
	t.record(b, im, scen, "CPU/call, all plugins", cpu, ns(plCPU))
}
