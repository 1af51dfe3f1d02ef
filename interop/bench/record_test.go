package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	nriapi "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
)

// The recording section of BenchmarkNRI (issue 41): what the recorder
// plugin (nri record, plugins/recorder) costs the runtime, on nrikit
// (where it declares itself observe-only and no event waits for it:
// docs/protocol.md §5.5) and on upstream (which ignores the declaration
// and calls it in its turn, CreateContainer and ValidateContainerAdjustment
// both); and what recording costs the recorder: a Synchronize of 10,000
// containers written to the file, and the bytes of an event. Each
// implementation gets its own section, whose two columns are that
// runtime with one plugin, without and with the recorder: the ratio
// column is the recorder's cost.

// The sections of the table, and their columns.
const (
	recordSectionNrikit   = "Recording on nrikit's runtime (issue 41; the recorder observe-only: no event waits for it)"
	recordSectionUpstream = "Recording on upstream's runtime (issue 41; the recorder waited for, as any plugin)"
)

var (
	recordColumnsNrikit   = [2]string{"nrikit, 1 plugin", "nrikit, 1 plugin + recorder"}
	recordColumnsUpstream = [2]string{"upstream, 1 plugin", "upstream, 1 plugin + recorder"}
)

// recordScenario is the CreateContainer row of a section (rows are
// found by scenario and metric: each section has its own).
func recordScenario(im string) string {
	return "CreateContainer, 1 plugin, without and with the recorder, " + im + "'s runtime"
}

// recorderPlugin installs the recorder in dir as 99-recorder: a wrapper
// running the recorder binary with its recording in dir (a runtime starts
// a pre-installed plugin without arguments).
func recorderPlugin(tb testing.TB, dir string) {
	tb.Helper()
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s\nexec %s -out %s \"$@\"\n",
		filepath.Join(dir, "99-recorder.pid"), bins.recorderPlugin, filepath.Join(dir, "node.nrirec"))
	if err := os.WriteFile(filepath.Join(dir, "99-recorder"), []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
}

// benchRecording runs the recording scenarios of BenchmarkNRI.
func benchRecording(b *testing.B, t *table, impls []impl, rounds int) {
	prev := t.section
	defer func() { t.section = prev }()
	for _, im := range impls {
		section, columns := recordSectionNrikit, recordColumnsNrikit
		if im.name == "upstream" {
			section, columns = recordSectionUpstream, recordColumnsUpstream
		}
		t.section = section
		t.columns(section, columns)
		for round := range rounds {
			for _, withRecorder := range []bool{false, true} {
				t.round = round
				benchWithRecorder(b, t, im, withRecorder)
			}
		}
	}

	t.section = recordSectionNrikit
	for round := range rounds {
		t.round = round
		if name := "Record/Synchronize/containers=10000"; selected(b, name) {
			b.Run(t.inRound(name), func(b *testing.B) {
				took, err := recordSynchronize(b, 10000)
				if err != nil {
					b.Fatal(err)
				}
				t.record(b, "nrikit", "Synchronize of 10,000 containers, recorded (redacted, compressed, flushed to the file)", "median", millis, ns(took))
			})
		}
		if name := "Record/BytesPerEvent"; selected(b, name) {
			b.Run(t.inRound(name), func(b *testing.B) {
				raw, compressed, err := recordEvents(b, 2000)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(raw, "bytes/event")
				b.ReportMetric(compressed, "compressed-bytes/event")
				const scen = "a container's lifecycle, 8 events, recorded (the workload's pod and container)"
				t.record(b, "nrikit", scen, "bytes/event, encoded", count, raw)
				t.record(b, "nrikit", scen, "bytes/event, in the file (gzip)", count, compressed)
			})
		}
	}
	t.round = 0
}

// benchWithRecorder measures CreateContainer through im with one plugin,
// and the recorder if withRecorder, in the current round.
func benchWithRecorder(b *testing.B, t *table, im impl, withRecorder bool) {
	tag := "none"
	// The section's baseline column is the table's "upstream" one.
	col := "upstream"
	if withRecorder {
		tag, col = "recorder", "nrikit"
	}
	name := fmt.Sprintf("Record/CreateContainer/plugins=1/%s/%s", im.name, tag)
	if !selected(b, name) {
		return
	}
	dir := pluginDir(b, im.plugin, envPlugins(1))
	want := 1
	if withRecorder {
		recorderPlugin(b, dir)
		want = 2
	}
	r := startInDir(b, im, dir, want)
	defer stopRuntime(b, r)
	plugins := envPlugins(1)
	if withRecorder {
		plugins = append(plugins, pluginSpec{full: "99-recorder"})
	}
	scen := recordScenario(im.name)
	b.Run(t.inRound(name), func(b *testing.B) {
		m := startCPU(dir, plugins)
		s := benchCreate(b, r, 1, 1, m.restart)
		recordCPU(b, t, col, scen, m)
		t.record(b, col, scen, "p50, back to back", micros, ns(s.p50))
		t.record(b, col, scen, "p99, back to back", micros, ns(s.p99))
		t.record(b, col, scen, "allocs/call", count, s.allocs)
	})
	b.Run(t.inRound(name+"/paced"), func(b *testing.B) {
		s := benchCreatePaced(b, r, pace)
		t.record(b, col, scen, "p50, one every 10 ms", micros, ns(s.p50))
		t.record(b, col, scen, "p99, one every 10 ms", micros, ns(s.p99))
	})
}

// pace is the gap between the calls of benchCreatePaced: 100
// creations a second, more than a node makes, and room, even on a busy
// machine, for what a call leaves to do after it returned (an observer's
// delivery, the recorder's writing) before the next.
const pace = 10 * time.Millisecond

// benchCreatePaced measures CreateContainer through r's one plugin, one
// call every pace: the latency of each call, without the work of the
// calls before it still running beside it, as in the back-to-back loop
// of benchCreate (on a busy machine, that is where an observer's CPU
// shows).
func benchCreatePaced(b *testing.B, r rt, gap time.Duration) sample {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	r.Prepare(b.N)
	lat := make([]time.Duration, b.N)
	tick := time.NewTicker(gap)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		start := time.Now()
		envs, err := r.Create(ctx, i)
		lat[i] = time.Since(start)
		if err == nil && envs != 1 {
			err = fmt.Errorf("merged adjustment has %d variables, want 1", envs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	r.Prepare(0)
	return finish(b, lat, 0, 0)
}

// startInDir starts im with the plugins of dir and checks want of them
// registered.
func startInDir(tb testing.TB, im impl, dir string, want int) rt {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	r, err := im.start(ctx, dir, nil)
	if err != nil {
		tb.Fatalf("%s: %v", im.name, err)
	}
	if got := r.Plugins(); got != want {
		r.Stop(ctx)
		tb.Fatalf("%s: %d plugins registered, want %d", im.name, got, want)
	}
	return r
}

// recordSynchronize measures the recorder's handling of a Synchronize of
// n containers (n/10 pods): the time from the handler's call until the
// snapshot is redacted, encoded, compressed and flushed to the file, the
// median of b.N recordings.
func recordSynchronize(b *testing.B, n int) (time.Duration, error) {
	pods, ctrs := workload.Existing(n)
	var took []time.Duration
	ctx := context.Background()
	for b.Loop() {
		rec, err := newBenchRecorder(b.TempDir())
		if err != nil {
			return 0, err
		}
		rec.Configure(ctx, "", "bench", "1")
		if err := rec.Flush(ctx); err != nil {
			return 0, err
		}
		// The handler keeps what it is given until written: a copy of
		// the snapshot, as the stub decodes one for every Synchronize.
		p, c := clonePods(pods), cloneCtrs(ctrs)
		start := time.Now()
		rec.Synchronize(ctx, p, c)
		err = rec.Flush(ctx)
		took = append(took, time.Since(start))
		if cerr := rec.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
		if s := rec.Stats(); s.Dropped != 0 {
			return 0, fmt.Errorf("%d records dropped", s.Dropped)
		}
	}
	return finish(b, took, 0, 0).p50, nil
}

// recordEvents records n containers' lifecycles (RunPodSandbox,
// CreateContainer, ValidateContainerAdjustment, PostCreateContainer,
// StartContainer, PostStartContainer, StopContainer, RemoveContainer) of
// the workload's pods and containers and returns the encoded and the
// compressed bytes per event.
func recordEvents(b *testing.B, n int) (raw, compressed float64, err error) {
	ctx := context.Background()
	for b.Loop() {
		dir := b.TempDir()
		rec, err := newBenchRecorder(dir)
		if err != nil {
			return 0, 0, err
		}
		rec.Configure(ctx, "", "bench", "1")
		events := 0
		for i := range n {
			req := workload.CreateRequest(i)
			pod, ctr := req.GetPod(), req.GetContainer()
			adj := &nriapi.ContainerAdjustment{}
			adj.AddEnv("BENCH_0", "0")
			rec.RunPodSandbox(ctx, clonePods([]*nriapi.PodSandbox{pod})[0])
			rec.CreateContainer(ctx, clonePods([]*nriapi.PodSandbox{pod})[0], cloneCtrs([]*nriapi.Container{ctr})[0])
			rec.ValidateContainerAdjustment(ctx, &nriapi.ValidateContainerAdjustmentRequest{
				Pod: clonePods([]*nriapi.PodSandbox{pod})[0], Container: cloneCtrs([]*nriapi.Container{ctr})[0], Adjust: adj})
			for _, f := range []func(context.Context, *nriapi.PodSandbox, *nriapi.Container) error{
				rec.PostCreateContainer, rec.StartContainer, rec.PostStartContainer, rec.RemoveContainer,
			} {
				_ = f(ctx, clonePods([]*nriapi.PodSandbox{pod})[0], cloneCtrs([]*nriapi.Container{ctr})[0])
			}
			_, _ = rec.StopContainer(ctx, clonePods([]*nriapi.PodSandbox{pod})[0], cloneCtrs([]*nriapi.Container{ctr})[0])
			events += 8
			if i%256 == 0 {
				if err := rec.Flush(ctx); err != nil { // keep within the queue
					return 0, 0, err
				}
			}
		}
		if err := rec.Close(ctx); err != nil {
			return 0, 0, err
		}
		s := rec.Stats()
		if s.Dropped != 0 {
			return 0, 0, fmt.Errorf("%d records dropped", s.Dropped)
		}
		info, err := os.Stat(filepath.Join(dir, "node.nrirec"))
		if err != nil {
			return 0, 0, err
		}
		raw, compressed = float64(s.Bytes)/float64(events), float64(info.Size())/float64(events)
	}
	return raw, compressed, nil
}

// newBenchRecorder is the recorder plugin's recorder, redacting with a
// fixed key, writing into dir.
func newBenchRecorder(dir string) (*record.Recorder, error) {
	red, err := record.NewRedactor(bytes.Repeat([]byte{1}, record.KeySize), nil, nil)
	if err != nil {
		return nil, err
	}
	return record.NewRecorder(record.RecorderConfig{Writer: record.WriterConfig{
		Path: filepath.Join(dir, "node.nrirec"), Redactor: red,
		Header: &recordpb.Header{Source: record.SourcePlugin, Recorder: "recorder"},
	}})
}

func clonePods(ps []*nriapi.PodSandbox) []*nriapi.PodSandbox {
	out := make([]*nriapi.PodSandbox, len(ps))
	for i, p := range ps {
		out[i] = nriapi.Clone(p)
	}
	return out
}

func cloneCtrs(cs []*nriapi.Container) []*nriapi.Container {
	out := make([]*nriapi.Container, len(cs))
	for i, c := range cs {
		out[i] = nriapi.Clone(c)
	}
	return out
}
