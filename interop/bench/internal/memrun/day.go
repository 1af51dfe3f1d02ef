package memrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// DayPeriod is the node's day's pace: one event every 100 ms, 10 per
// second.
const DayPeriod = 100 * time.Millisecond

// DayRuntime is a Runtime that can send the node's day events.
type DayRuntime interface {
	PrepareDay(evs []workload.Event)
	SendDay(ctx context.Context, i int) error
}

// DayResult is what a paced run of the node's day found.
type DayResult struct {
	// Latency holds each kind's latencies, sorted: from the moment the
	// event was sent to the moment the runtime's call returned.
	Latency map[workload.Kind][]time.Duration
	// Lag holds, sorted, how late each event was sent after its
	// scheduled time (the sender is one goroutine: a slow event delays
	// the next ones).
	Lag []time.Duration
	// Failed counts the events whose call failed; FirstErr is the first
	// failure.
	Failed   int
	FirstErr error
	// Wall is how long the day took.
	Wall time.Duration
}

// Paced sends evs with send, each at its scheduled time (open loop: the
// schedule does not wait for slow events, but events are sent one at a
// time and in order, as a pod's lifecycle must be).
func Paced(ctx context.Context, send func(ctx context.Context, i int) error, evs []workload.Event) (DayResult, error) {
	res := DayResult{Latency: map[workload.Kind][]time.Duration{}, Lag: make([]time.Duration, 0, len(evs))}
	timer := time.NewTimer(0)
	defer timer.Stop()
	start := time.Now()
	for i, e := range evs {
		due := start.Add(e.At)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return res, fmt.Errorf("memrun: the day stopped at event %d: %w", i, ctx.Err())
			}
		}
		sent := time.Now()
		err := send(ctx, i)
		res.Latency[e.Kind] = append(res.Latency[e.Kind], time.Since(sent))
		res.Lag = append(res.Lag, sent.Sub(due))
		if err != nil {
			res.Failed++
			if res.FirstErr == nil {
				res.FirstErr = fmt.Errorf("memrun: event %d (%v): %w", i, e.Kind, err)
			}
		}
	}
	res.Wall = time.Since(start)
	for _, l := range res.Latency {
		slices.Sort(l)
	}
	slices.Sort(res.Lag)
	return res, nil
}

// Quantile returns the q-th percentile of the sorted durations d (0 for
// none).
func Quantile(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*q/100)]
}

// runDay starts a runtime on a node of pods pods (workload.DayNode),
// sends the node's day for d at DayPeriod, and prints key=value lines
// (see ParseDay).
func runDay(start StartFunc, s Setup, d time.Duration, pods, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Minute)
	defer cancel()
	s.Pods, s.Ctrs = workload.DayNode(pods)
	rt, err := start(ctx, s)
	if err != nil {
		return err
	}
	defer rt.Stop(ctx)
	if got := rt.Plugins(); got != want {
		return fmt.Errorf("%d plugins registered, want %d", got, want)
	}
	dr, ok := rt.(DayRuntime)
	if !ok {
		return fmt.Errorf("runtime %T cannot send the node's day", rt)
	}
	evs := workload.Day(pods, int(d/DayPeriod), DayPeriod)
	dr.PrepareDay(evs)
	pids, err := pluginPIDs(s.PluginDir)
	if err != nil {
		return err
	}
	self0, plug0 := workload.SelfCPUTime(), sumCPU(pids)
	res, err := Paced(ctx, dr.SendDay, evs)
	if err != nil {
		return err
	}
	self, plug := workload.SelfCPUTime()-self0, sumCPU(pids)-plug0
	if res.FirstErr != nil {
		fmt.Fprintln(os.Stderr, res.FirstErr)
	}
	var out strings.Builder
	for _, k := range workload.Kinds() {
		l := res.Latency[k]
		fmt.Fprintf(&out, "%v-n=%d\n%v-p50-ns=%d\n%v-p99-ns=%d\n", k, len(l), k, Quantile(l, 50), k, Quantile(l, 99))
	}
	n := int64(max(len(evs), 1))
	fmt.Fprintf(&out, "events=%d\nfailed=%d\nwall-ns=%d\nlag-p99-ns=%d\nlag-max-ns=%d\n", len(evs), res.Failed, res.Wall,
		Quantile(res.Lag, 99), Quantile(res.Lag, 100))
	fmt.Fprintf(&out, "runtime-cpu-ns-per-event=%d\nplugins-cpu-ns-per-event=%d\n", self.Nanoseconds()/n, plug.Nanoseconds()/n)
	m, err := workload.ReadMemory(0)
	if err != nil {
		return err
	}
	var hwmMax, hwmSum int64
	for _, pid := range pids {
		pm, err := workload.ReadMemory(pid)
		if err != nil {
			return err
		}
		hwmMax, hwmSum = max(hwmMax, pm.HWMKiB), hwmSum+pm.HWMKiB
	}
	fmt.Fprintf(&out, "runtime-hwm-kib=%d\nplugin-hwm-max-kib=%d\nplugins-hwm-sum-kib=%d\nplugins=%d\n", m.HWMKiB, hwmMax, hwmSum, len(pids))
	_, err = os.Stdout.WriteString(out.String())
	return err
}

// pluginPIDs reads the PID files (NAME.pid) the plugins of dir wrote.
func pluginPIDs(dir string) ([]int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return nil, fmt.Errorf("memrun: %w", err)
	}
	var pids []int
	for _, f := range files {
		buf, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("memrun: %w", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(buf)))
		if err != nil {
			return nil, fmt.Errorf("memrun: PID file %s: %w", f, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func sumCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if d, err := workload.CPUTime(pid); err == nil {
			sum += d
		}
	}
	return sum
}

// ParseDay reads what a runtime process printed for the node's day: the
// key=value lines, as integers.
func ParseDay(out string) (map[string]int64, error) {
	vals := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		key, val, ok := strings.Cut(line, "=")
		v, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("memrun: parsing %q of the day's output", line)
		}
		vals[key] = v
	}
	if _, ok := vals["events"]; !ok {
		return nil, fmt.Errorf("memrun: the day's output %q lacks events", out)
	}
	return vals, nil
}
