package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
)

// TestUpdateFlood: a registered plugin pipelining 20,000 UpdateContainers
// requests (raw ttrpc frames) without ever reading an answer holds at
// most the in-flight limit of calls in the runtime: the process's
// goroutines (the test's own, a handful, included) stay below the
// baseline + limit + 64 throughout. As it reads none of the answers, the
// plugin ends up not reading its connection at all and is disconnected.
// Meanwhile creations involving it return within twice the request
// timeout, and creations sent only to another plugin succeed within the
// request timeout (they never wait for the flooding plugin). Once the
// plugin is gone the goroutines and open fds return to their baseline.
// Guards against issue 13, problem 4: one goroutine per request (19,926
// goroutines) and a CreateContainer blocked for 20 s.
func TestUpdateFlood(t *testing.T) {
	checkLeaks(t)
	const maxInFlight = 16
	rt := startRuntime(t, adaptation.WithMaxInFlightUpdates(maxInFlight))
	startStub(t, rt, "20", "healthy", "-namespaces", "other", "-env", "HEALTHY=1")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	before := takeBaseline(t)
	bound := before.goroutines + maxInFlight + 64
	var (
		peak    atomic.Int64
		running sync.WaitGroup
		stop    = make(chan struct{})
	)
	running.Go(func() {
		for {
			peak.Store(max(peak.Load(), int64(runtime.NumGoroutine())))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	fl := startRaw(t, rt, "10", "flood", "-behave", "flood", "-flood", "20000", "-namespaces", "flood")
	fl.waitLine(t, "FLOOD start", hangGuard)
	handled := func(r logRecord) bool {
		return r.attrs["plugin"] == "10-flood" && r.msg == "plugin requested container updates"
	}
	rt.logs.waitN(t, 2*maxInFlight, hangGuard, "updates of the flooding plugin", handled)

	// Creations involving the flooding plugin, and not involving it, one
	// after the other, until the runtime has dropped the plugin.
	var (
		mu      sync.Mutex
		results = map[string][]creation{}
	)
	for _, ns := range []string{"flood", "other"} {
		running.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				id := fmt.Sprintf("%s%d", ns, i)
				rsp, took, err := rt.create(ctx, testPod(ns, ns+"pod"), testCtr(ns+"pod", id, 1, 10))
				mu.Lock()
				results[ns] = append(results[ns], creation{id, rsp, took, err})
				mu.Unlock()
			}
		})
	}
	gone := rt.waitGone(t, "10-flood", hangGuard)
	t.Logf("flooding plugin disconnected after %d requests were handled: %s",
		len(rt.logs.find(handled)), gone.attrs["reason"])
	time.Sleep(50 * time.Millisecond) // a few creations after
	close(stop)
	running.Wait()
	fl.kill()
	if p := peak.Load(); p > int64(bound) {
		t.Errorf("goroutines peaked at %d during the flood, above baseline %d + %d in flight + 64", p, before.goroutines, maxInFlight)
	} else {
		t.Logf("goroutines peaked at %d during the flood (baseline %d, bound %d)", p, before.goroutines, bound)
	}
	for ns, bound := range map[string]time.Duration{"flood": 2 * requestTimeout, "other": requestTimeout} {
		var slowest time.Duration
		for _, c := range results[ns] {
			slowest = max(slowest, c.took)
			switch {
			case c.err != nil:
				t.Errorf("CreateContainer %s: %v", c.what, c.err)
			case c.took > bound:
				t.Errorf("CreateContainer %s took %v, above its bound of %v", c.what, c.took, bound)
			case ns == "other" && envOf(c.rsp)["HEALTHY"] != "1":
				t.Errorf("CreateContainer %s: the healthy plugin's adjustment is missing: %v", c.what, envOf(c.rsp))
			}
		}
		t.Logf("namespace %s: %d creations during the flood, slowest %v (bound %v)", ns, len(results[ns]), slowest, bound)
		if len(results[ns]) == 0 {
			t.Errorf("namespace %s: no creation during the flood", ns)
		}
	}
	before.await(t, "after the flooding plugin is gone", 10*time.Second)
	if _, _, err := rt.create(ctx, testPod("other", "opod"), testCtr("opod", "after", 1, 10)); err != nil {
		t.Errorf("CreateContainer after the flood: %v", err)
	}
}

// TestUnopenedConnectionFlood: 4 connections, each sending frames of
// 4 MiB for connection IDs 3 and 4, which NRI never opens, are closed by
// the runtime, whose heap (after GC, sampled throughout) stays below
// 64 MiB above its baseline; a well-behaved plugin registers afterwards.
// Guards against issue 13, problem 3: such frames were buffered by count
// (the runtime grew from 26 MiB to 1 GiB in 2.7 s).
func TestUnopenedConnectionFlood(t *testing.T) {
	checkLeaks(t)
	const heapBound = 64 << 20
	rt := startRuntime(t)
	base := heapAfterGC()
	var (
		peak     atomic.Uint64
		sampling sync.WaitGroup
		stop     = make(chan struct{})
	)
	sampling.Go(func() {
		for {
			peak.Store(max(peak.Load(), heapAfterGC()))
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	u := startPlugin(t, "unopened", "unopened", "-socket", rt.socket, "-conns", "4", "-ids", "3,4")
	u.waitExit(t, hangGuard)
	close(stop)
	sampling.Wait()
	lines := u.with("UNOPENED")
	if len(lines) != 4 {
		t.Errorf("%d connections reported, want 4", len(lines))
	}
	for _, l := range lines {
		if !strings.Contains(l.text, "closed=true") {
			t.Errorf("connection not closed by the runtime: %s", l.text)
		}
		t.Log(l.text)
	}
	if grown := int64(peak.Load()) - int64(base); grown > heapBound {
		t.Errorf("heap after GC peaked %d MiB above its baseline (bound %d MiB)", grown>>20, heapBound>>20)
	} else {
		t.Logf("heap after GC peaked %.1f MiB above its baseline (bound %d MiB)", float64(grown)/(1<<20), heapBound>>20)
	}
	startStub(t, rt, "20", "healthy", "-env", "HEALTHY=1")
}

// TestPendingConnectionLimit: with WithMaxPendingConnections(4), of 7
// idle connections that never register the 3 beyond the limit are closed
// at once (long before the registration timeout) with a log line saying
// why, the other 4 stay open; once those are gone a plugin registers.
// Guards against issue 13, problem 8: no limit on unregistered
// connections.
func TestPendingConnectionLimit(t *testing.T) {
	checkLeaks(t)
	const limit, conns = 4, 7
	// Refusals come at once; the connections kept open stay open for the
	// registration timeout, well beyond the window the test looks at.
	window := scaled(time.Second)
	rt := startRuntime(t, adaptation.WithMaxPendingConnections(limit), adaptation.WithRegistrationTimeout(10*window))
	var (
		closed atomic.Int32
		wg     sync.WaitGroup
		all    []net.Conn
	)
	start := time.Now()
	for range conns {
		c, err := net.Dial("unix", rt.socket)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c)
		wg.Go(func() {
			_, err := c.Read(make([]byte, 1))
			if errors.Is(err, io.EOF) && time.Since(start) < window {
				closed.Add(1)
			}
		})
	}
	refused := func(r logRecord) bool {
		return r.msg == "refusing plugin connection: too many connections have not registered yet"
	}
	recs := rt.logs.waitN(t, conns-limit, window, "refused connections", refused)
	time.Sleep(window) // within the registration timeout: the others stay open
	if n := closed.Load(); n != conns-limit {
		t.Errorf("%d connections closed by the runtime within %v, want %d", n, window, conns-limit)
	}
	if n := len(rt.logs.find(refused)); n != conns-limit {
		t.Errorf("%d refusals logged, want %d", n, conns-limit)
	}
	for _, r := range recs {
		if r.level != slog.LevelWarn || r.attrs["limit"] != "4" {
			t.Errorf("refusal logged as %s", r)
		}
	}
	for _, c := range all {
		c.Close()
	}
	wg.Wait()
	rt.logs.waitN(t, limit, hangGuard, "closed pending connections", func(r logRecord) bool {
		return r.msg == "plugin registration failed" && strings.Contains(r.attrs["error"], "closed its connection before registering")
	})
	startStub(t, rt, "20", "healthy")
}
