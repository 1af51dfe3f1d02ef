package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// perPluginDecodeBound bounds the live heap one plugin sending messages
// built to decode into as much as possible holds in the runtime (see
// TestBoundedDecoding; measured: about 40 MiB).
const perPluginDecodeBound = 96 << 20

// TestBoundedDecoding: 1, then 2 plugins that answer every CreateContainer
// with 4 MiB (the max answer size raised to the message limit) and send
// UpdateContainers from 4 callers without pause, each message built to
// decode into as much as the runtime's bounds allow (bloatedAdjustment,
// bloatedUpdates: empty entries up to MaxMessageValues, then unknown
// fields), hold the runtime's live heap (after GC, sampled throughout)
// below perPluginDecodeBound per plugin above its baseline; so does a
// plugin whose messages are all empty entries, beyond the bounds (the
// attack of issue 23, which the runtime refuses). The peaks are the
// figures of docs/protocol.md §12.2:
//
//	go test -run TestBoundedDecoding -v ./tests/chaos
//
// Guards against issue 23, finding 2: 4 MiB of empty entries decoded into
// 173 MiB, and a plugin's 16 UpdateContainers requests were decoded at
// once.
func TestBoundedDecoding(t *testing.T) {
	cases := []struct {
		plugins int
		args    []string
	}{
		{1, nil}, {2, nil}, {1, []string{"-bloat-empty"}},
	}
	creates, answered := 8, "BLOAT 64 "
	if raceEnabled {
		// Ten times slower: one plugin, fewer messages.
		cases, creates, answered = cases[:1], 2, "BLOAT 16 "
	}
	for _, tc := range cases {
		plugins := tc.plugins
		name := fmt.Sprintf("plugins=%d", plugins)
		if len(tc.args) > 0 {
			name += "/empty-entries"
		}
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			var updated atomic.Int64
			// A generous request timeout: decoding 4 MiB answers of
			// several plugins at once takes a while on a busy machine.
			rt := startCountingRuntime(t, &updated, adaptation.WithMaxAnswerSize(adaptation.MaxMessageSize),
				adaptation.WithRequestTimeout(20*time.Second))
			base := heapAfterGC()
			var (
				peak     atomic.Uint64
				sampling sync.WaitGroup
				stop     = make(chan struct{})
			)
			stopSampling := sync.OnceFunc(func() { close(stop); sampling.Wait() })
			defer stopSampling()
			sampling.Go(func() {
				for {
					peak.Store(max(peak.Load(), heapAfterGC()))
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			})
			var procs []*pluginProc
			for i := range plugins {
				p := startRaw(t, rt, fmt.Sprint(10+i), fmt.Sprint("bloat", i), append([]string{"-behave", "bloat", "-bloat", "4"}, tc.args...)...)
				p.waitLine(t, "BLOAT start", hangGuard)
				procs = append(procs, p)
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			for i := range creates {
				_, took, err := rt.create(ctx, testPod("default", "pod1"), testCtr("pod1", fmt.Sprint("ctr", i), 1, 10))
				if err != nil {
					t.Fatalf("CreateContainer: %v", err)
				}
				t.Logf("CreateContainer %d took %v", i, took)
			}
			for _, p := range procs {
				p.waitLine(t, answered, hangGuard)
			}
			stopSampling()
			grown := int64(peak.Load()) - int64(base)
			t.Logf("%d plugins: live heap after GC peaked %.1f MiB above its baseline of %.1f MiB (%.1f MiB per plugin)",
				plugins, float64(grown)/(1<<20), float64(base)/(1<<20), float64(grown)/float64(plugins)/(1<<20))
			if grown > int64(plugins*perPluginDecodeBound) {
				t.Errorf("above the bound of %d MiB per plugin", perPluginDecodeBound>>20)
			}
			for _, p := range procs {
				p.kill()
			}
			if updated.Load() == 0 && len(tc.args) == 0 {
				t.Error("no update reached the runtime: the requests were not decoded")
			}
		})
	}
}

// startCountingRuntime is startRuntime with an UpdateFunc that counts the
// updates in updated instead of keeping them, as the store does.
func startCountingRuntime(t *testing.T, updated *atomic.Int64, opts ...adaptation.Option) *testRuntime {
	t.Helper()
	rt := &testRuntime{logs: newLogSink(), store: runtimetest.NewStore(), socket: filepath.Join(t.TempDir(), "nri.sock")}
	update := func(_ context.Context, u []*api.ContainerUpdate, _ []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		updated.Add(int64(len(u)))
		return nil, nil
	}
	a, err := adaptation.New("chaos-runtime", "v0.0.1", rt.store.List, update, append([]adaptation.Option{
		adaptation.WithSocketPath(rt.socket), adaptation.WithPluginDir(""),
		adaptation.WithLogger(rt.logs.logger()),
		adaptation.WithRequestTimeout(requestTimeout),
		adaptation.WithRegistrationTimeout(registrationTimeout),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rt.a = a
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			rt.logs.dump(t, 50)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return rt
}
