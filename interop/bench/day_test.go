package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/nrirt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// The node's day (issue 27): a node of dayPods pods of 3 containers, its
// pods replaced one after another at 10 events per second, through
// dayPlugins plugins (see docs/benchmarks.md).
const (
	dayPods    = 110 // the kubelet's default pod limit
	dayPlugins = 4
	// defaultDay is how long the day lasts without BENCH_DAY.
	defaultDay = 60 * time.Second
)

// dayScenario is the scenario column of the day's rows.
var dayScenario = fmt.Sprintf("node's day: %d pods × %d containers, %v events/s, %d plugins",
	dayPods, workload.ContainersPerPod, int(time.Second/memrun.DayPeriod), dayPlugins)

// dayDuration returns how long the node's day lasts: the environment
// variable BENCH_DAY (a duration, at most an hour), 60 s by default.
func dayDuration() time.Duration {
	if v := os.Getenv("BENCH_DAY"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= memrun.DayPeriod && d <= time.Hour {
			return d
		}
		fmt.Fprintf(os.Stderr, "BENCH_DAY=%q is not a duration in [100ms, 1h]; the day lasts %v\n", v, defaultDay)
	}
	return defaultDay
}

// lifecyclePlugins are n plugins subscribed to the whole lifecycle, each
// adding its own variable in CreateContainer.
func lifecyclePlugins(n int) []pluginSpec {
	ps := envPlugins(n)
	for i := range ps {
		ps[i].full = fmt.Sprintf("%02d-day%d", 10+i, i)
		ps[i].cfg.Lifecycle = true
	}
	return ps
}

// benchDay runs the node's day of BenchmarkNRI: per round, each
// implementation's runtime process (bench/runtimes) with its plugins.
func benchDay(b *testing.B, t *table, impls []impl, rounds int) {
	d := dayDuration()
	for _, im := range interleave(t, rounds, impls) {
		name := fmt.Sprintf("Day/plugins=%d/%s", dayPlugins, im.name)
		if !selected(b, name) {
			continue
		}
		b.Run(t.inRound(name), func(b *testing.B) {
			vals, err := runDay(b, im, d)
			for b.Loop() { // the day ran once, outside the loop
			}
			if err != nil {
				b.Logf("%s: the node's day failed: %v", im.name, err)
				t.row(dayScenario, "events failed", count).note = im.name + " failed: " + err.Error()
				t.record(b, im.name, dayScenario, "events failed", count, math.Inf(1))
				return
			}
			recordDay(b, t, im.name, vals)
		})
	}
}

// runDay runs im's runtime process for the node's day of d and returns
// what it printed.
func runDay(b *testing.B, im impl, d time.Duration) (map[string]int64, error) {
	dir := pluginDir(b, im.plugin, lifecyclePlugins(dayPlugins))
	bin := bins.nrikitRuntime
	if im.name == "upstream" {
		bin = bins.upstreamRuntime
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-plugins", dir, "-day", d.String(),
		"-pods", strconv.Itoa(dayPods), "-want", strconv.Itoa(dayPlugins))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s runtime: %w", im.name, err)
	}
	return memrun.ParseDay(string(out))
}

// recordDay records the figures of one day.
func recordDay(b *testing.B, t *table, im string, vals map[string]int64) {
	for _, k := range workload.Kinds() {
		for _, q := range []string{"p50", "p99"} {
			t.record(b, im, dayScenario, fmt.Sprintf("%v %s", k, q), micros, float64(vals[fmt.Sprintf("%v-%s-ns", k, q)]))
		}
	}
	t.record(b, im, dayScenario, "CPU/event, runtime", cpu, float64(vals["runtime-cpu-ns-per-event"]))
	t.record(b, im, dayScenario, "CPU/event, all plugins", cpu, float64(vals["plugins-cpu-ns-per-event"]))
	t.record(b, im, dayScenario, "VmHWM, runtime process", kib, float64(vals["runtime-hwm-kib"]))
	t.record(b, im, dayScenario, "VmHWM, largest plugin", kib, float64(vals["plugin-hwm-max-kib"]))
	t.record(b, im, dayScenario, "VmHWM, all plugins summed", kib, float64(vals["plugins-hwm-sum-kib"]))
	t.record(b, im, dayScenario, "send lag behind schedule, p99", millis, float64(vals["lag-p99-ns"]))
	t.record(b, im, dayScenario, "send lag behind schedule, max", millis, float64(vals["lag-max-ns"]))
	t.record(b, im, dayScenario, "events failed", count, float64(vals["failed"]))
	t.row(dayScenario, "RunPodSandbox p50", micros).note = fmt.Sprintf("%d events; latency from send", vals["events"])
}

// TestDaySchedule checks the node's day keeps the node at 109 or 110
// pods and sends every pod's and container's events in lifecycle order.
func TestDaySchedule(t *testing.T) {
	const n = 600
	evs := workload.Day(dayPods, n, memrun.DayPeriod)
	if len(evs) != n {
		t.Fatalf("%d events, want %d", len(evs), n)
	}
	pods, ctrs := workload.DayNode(dayPods)
	podState := map[string]workload.Kind{}
	for _, p := range pods {
		podState[p.GetId()] = workload.RunPodSandbox
	}
	ctrState := map[string]workload.Kind{}
	for _, c := range ctrs {
		ctrState[c.GetId()] = workload.StartContainer
	}
	// next[k] is the state an object must be in for event k.
	podNext := map[workload.Kind]workload.Kind{workload.StopPodSandbox: workload.RunPodSandbox, workload.RemovePodSandbox: workload.StopPodSandbox}
	ctrNext := map[workload.Kind]workload.Kind{workload.StartContainer: workload.CreateContainer,
		workload.UpdateContainer: workload.StartContainer, workload.StopContainer: workload.StartContainer,
		workload.RemoveContainer: workload.StopContainer}
	perKind := map[workload.Kind]int{}
	for i, e := range evs {
		perKind[e.Kind]++
		if e.At != time.Duration(i)*memrun.DayPeriod {
			t.Fatalf("event %d due at %v", i, e.At)
		}
		pid := e.Pod.GetId()
		switch e.Kind {
		case workload.RunPodSandbox:
			if _, ok := podState[pid]; ok {
				t.Fatalf("event %d runs pod %s twice", i, e.Pod.GetName())
			}
			podState[pid] = e.Kind
		case workload.StopPodSandbox, workload.RemovePodSandbox:
			if podState[pid] != podNext[e.Kind] {
				t.Fatalf("event %d: %v of pod %s in state %v", i, e.Kind, e.Pod.GetName(), podState[pid])
			}
			podState[pid] = e.Kind
			if e.Kind == workload.RemovePodSandbox {
				delete(podState, pid)
			}
		default:
			cid := e.Ctr.GetId()
			if e.Ctr.GetPodSandboxId() != pid || podState[pid] != workload.RunPodSandbox {
				t.Fatalf("event %d: %v of a container of pod %s in state %v", i, e.Kind, e.Pod.GetName(), podState[pid])
			}
			if st, ok := ctrState[cid]; e.Kind == workload.CreateContainer && ok || e.Kind != workload.CreateContainer && st != ctrNext[e.Kind] {
				t.Fatalf("event %d: %v of container %s in state %v", i, e.Kind, e.Ctr.GetName(), st)
			}
			if e.Kind != workload.UpdateContainer {
				ctrState[cid] = e.Kind
			}
			if e.Kind == workload.RemoveContainer {
				delete(ctrState, cid)
			}
			if e.Kind == workload.UpdateContainer && e.Resources.GetMemory().GetLimit() == nil {
				t.Fatalf("event %d: UpdateContainer without resources", i)
			}
		}
		if len(podState) < dayPods-1 || len(podState) > dayPods {
			t.Fatalf("after event %d the node has %d pods, want %d or %d", i, len(podState), dayPods-1, dayPods)
		}
	}
	for _, k := range workload.Kinds() {
		if perKind[k] < n/16 {
			t.Errorf("%d %v events in %d, want at least %d", perKind[k], k, n, n/16)
		}
	}
}

// TestDayPaced runs a short node's day (2 s) through nrikit's runtime in
// this process, without plugins, and checks it is paced (open loop at 10
// events per second, not as fast as possible) and every event succeeds.
func TestDayPaced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods, ctrs := workload.DayNode(dayPods)
	r, err := nrirt.Start(ctx, t.TempDir(), pods, ctrs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop(ctx)
	evs := workload.Day(dayPods, 20, memrun.DayPeriod)
	r.PrepareDay(evs)
	res, err := memrun.Paced(ctx, r.SendDay, evs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 {
		t.Errorf("%d events failed, the first: %v", res.Failed, res.FirstErr)
	}
	if last := evs[len(evs)-1].At; res.Wall < last {
		t.Errorf("the day took %v, less than its schedule's %v: not paced", res.Wall, last)
	}
	sent := 0
	for _, l := range res.Latency {
		sent += len(l)
	}
	if sent != len(evs) || len(res.Lag) != len(evs) {
		t.Errorf("%d latencies and %d lags for %d events", sent, len(res.Lag), len(evs))
	}
	for _, k := range workload.Kinds() {
		if len(res.Latency[k]) == 0 {
			t.Errorf("no %v sent in the first %d events", k, len(evs))
		}
	}
	if res.Lag[0] < 0 {
		t.Errorf("an event was sent %v before its time", -res.Lag[0])
	}
}
