package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/interop/bench/internal/nrirt"
	"github.com/nrikit/nrikit/interop/bench/internal/pluginconf"
	"github.com/nrikit/nrikit/interop/bench/internal/uprt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// hangGuard bounds every setup and benchmark step.
const hangGuard = 10 * time.Minute

// rt is a started runtime of either implementation.
type rt interface {
	Prepare(n int)
	Create(ctx context.Context, i int) (int, error)
	PostStart(ctx context.Context) error
	Plugins() int
	Stop(ctx context.Context) error
}

// impl is one implementation under test.
type impl struct {
	name   string
	plugin string // plugin binary
	start  func(ctx context.Context, dir string, existing *listing) (rt, error)
}

// listing is a set of existing containers in both implementations' types.
type listing struct {
	n    int
	ours struct {
		pods []*nriPod
		ctrs []*nriCtr
	}
	up struct {
		pods []*upPod
		ctrs []*upCtr
	}
}

func newListing(n int) *listing {
	l := &listing{n: n}
	l.ours.pods, l.ours.ctrs = workload.Existing(n)
	l.up.pods, l.up.ctrs = uprt.Existing(l.ours.pods, l.ours.ctrs)
	return l
}

func upstreamImpl() impl {
	return impl{name: "upstream", plugin: bins.upstreamPlugin,
		start: func(ctx context.Context, dir string, l *listing) (rt, error) {
			if l == nil {
				return uprt.Start(ctx, dir, nil, nil)
			}
			return uprt.Start(ctx, dir, l.up.pods, l.up.ctrs)
		}}
}

// nrikitImpl is nrikit's runtime, started with opts.
func nrikitImpl(opts ...adaptation.Option) impl {
	return impl{name: "nrikit", plugin: bins.nrikitPlugin,
		start: func(ctx context.Context, dir string, l *listing) (rt, error) {
			if l == nil {
				return nrirt.Start(ctx, dir, nil, nil, opts...)
			}
			return nrirt.Start(ctx, dir, l.ours.pods, l.ours.ctrs, opts...)
		}}
}

// pluginSpec is one pre-installed plugin of a scenario.
type pluginSpec struct {
	full string // IDX-NAME
	cfg  pluginconf.Config
}

// envPlugins are n plugins, each adding its own variable.
func envPlugins(n int) []pluginSpec {
	var ps []pluginSpec
	for i := range n {
		ps = append(ps, pluginSpec{full: fmt.Sprintf("%02d-env%d", 10+i, i),
			cfg: pluginconf.Config{EnvKey: fmt.Sprintf("BENCH_%d", i), EnvValue: strconv.Itoa(i)}})
	}
	return ps
}

// scopedPlugins are n plugins of which only the first is interested in
// the benchmark's namespace.
func scopedPlugins(n int) []pluginSpec {
	ps := envPlugins(n)
	for i := range ps {
		ps[i].full = fmt.Sprintf("%02d-scoped%d", 10+i, i)
		ps[i].cfg.Namespace = fmt.Sprintf("elsewhere-%d", i)
	}
	ps[0].cfg.Namespace = workload.Namespace
	return ps
}

// pluginDir installs the plugins (hard links of the implementation's
// binary, each with its sidecar configuration and PID file) in a new
// directory and returns it.
func pluginDir(tb testing.TB, binary string, plugins []pluginSpec) string {
	dir := tb.TempDir()
	for _, p := range plugins {
		exe := filepath.Join(dir, p.full)
		if err := os.Link(binary, exe); err != nil {
			if err := os.Symlink(binary, exe); err != nil {
				tb.Fatal(err)
			}
		}
		cfg := p.cfg
		cfg.PIDFile = exe + ".pid"
		if err := pluginconf.Write(exe, cfg); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// pluginPID returns the process ID the plugin full in dir wrote.
func pluginPID(dir, full string) (int, error) {
	buf, err := os.ReadFile(filepath.Join(dir, full+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(buf)))
}

// startRuntime starts im with plugins and checks they all registered.
func startRuntime(tb testing.TB, im impl, plugins []pluginSpec) (rt, string) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	dir := pluginDir(tb, im.plugin, plugins)
	r, err := im.start(ctx, dir, nil)
	if err != nil {
		tb.Fatalf("%s: %v", im.name, err)
	}
	if got := r.Plugins(); got != len(plugins) {
		r.Stop(ctx)
		tb.Fatalf("%s: %d plugins registered, want %d", im.name, got, len(plugins))
	}
	return r, dir
}

func stopRuntime(tb testing.TB, r rt) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		tb.Error(err)
	}
}

// sample is what one measured loop found.
type sample struct {
	n        int
	p50, p99 time.Duration
	allocs   float64 // heap allocations per call in this process
	perSec   float64 // calls per second (wall clock)
}

func percentile(lat []time.Duration, q int) time.Duration {
	return lat[min(len(lat)-1, len(lat)*q/100)]
}

// measure calls call(i) for i in [0, b.N), sequentially, and reports
// latency percentiles and allocations.
func measure(b *testing.B, call func(ctx context.Context, i int) error, prep ...func(n int)) sample {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for _, p := range prep {
		p(b.N)
	}
	lat := make([]time.Duration, b.N)
	var m0, m1 runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for i := range b.N {
		t := time.Now()
		err := call(ctx, i)
		lat[i] = time.Since(t)
		if err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start)
	runtime.ReadMemStats(&m1)
	b.StopTimer()
	return finish(b, lat, wall, m1.Mallocs-m0.Mallocs)
}

// measureParallel is measure with callers concurrent callers.
func measureParallel(b *testing.B, callers int, call func(ctx context.Context, i int) error, prep ...func(n int)) sample {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for _, p := range prep {
		p(b.N)
	}
	lat := make([]time.Duration, b.N)
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	var m0, m1 runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t := time.Now()
				err := call(ctx, i)
				lat[i] = time.Since(t)
				if err != nil {
					errMu.Lock()
					first = cmpErr(first, err)
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	runtime.ReadMemStats(&m1)
	b.StopTimer()
	if first != nil {
		b.Fatal(first)
	}
	return finish(b, lat, wall, m1.Mallocs-m0.Mallocs)
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func finish(b *testing.B, lat []time.Duration, wall time.Duration, mallocs uint64) sample {
	slices.Sort(lat)
	s := sample{n: len(lat), p50: percentile(lat, 50), p99: percentile(lat, 99),
		allocs: float64(mallocs) / float64(len(lat))}
	if wall > 0 {
		s.perSec = float64(len(lat)) / wall.Seconds()
	}
	b.ReportMetric(float64(s.p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(s.p99.Nanoseconds()), "p99-ns")
	return s
}

// flagValue returns the value of the command-line flag name.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// matchParts reports whether the -bench pattern levels pats (below the
// top level) could select the sub-benchmark name levels, as the testing
// package matches them (an unanchored regexp per level).
func matchParts(pats, name []string) bool {
	for i, p := range pats {
		if i >= len(name) {
			return true
		}
		re, err := regexp.Compile(p)
		if err != nil || !re.MatchString(name[i]) {
			return false
		}
	}
	return true
}

// splitPattern splits a -bench pattern at the slashes that are not inside
// parentheses or brackets, as the testing package does.
func splitPattern(pat string) []string {
	var (
		parts []string
		depth int
		last  int
	)
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '\\':
			i++
		case '/':
			if depth == 0 {
				parts = append(parts, pat[last:i])
				last = i + 1
			}
		}
	}
	return append(parts, pat[last:])
}

// cpuMeter measures the CPU time the runtime (this process) and the
// plugin processes of a scenario spend.
type cpuMeter struct {
	pids         []int
	self, plugin time.Duration
}

// startCPU starts measuring, for the plugins installed in dir.
func startCPU(dir string, plugins []pluginSpec) *cpuMeter {
	m := &cpuMeter{}
	for _, p := range plugins {
		if pid, err := pluginPID(dir, p.full); err == nil {
			m.pids = append(m.pids, pid)
		}
	}
	m.restart()
	return m
}

// restart starts the measurement again from now.
func (m *cpuMeter) restart() { m.self, m.plugin = workload.SelfCPUTime(), m.pluginCPU() }

func (m *cpuMeter) pluginCPU() time.Duration {
	var sum time.Duration
	for _, pid := range m.pids {
		if d, err := workload.CPUTime(pid); err == nil {
			sum += d
		}
	}
	return sum
}

// perCall returns the CPU time per call of the runtime and of all
// plugins together since startCPU, for n calls.
func (m *cpuMeter) perCall(n int) (runtime, plugins time.Duration) {
	if n == 0 {
		return 0, 0
	}
	return (workload.SelfCPUTime() - m.self) / time.Duration(n), (m.pluginCPU() - m.plugin) / time.Duration(n)
}
