package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// creation is the outcome of one CreateContainer call.
type creation struct {
	what string
	rsp  *api.CreateContainerResponse
	took time.Duration
	err  error
}

// concern is a kind of creation in the frozen-plugin test: its pod's
// namespace, the plugins it involves and the bound it must return within.
type concern struct {
	ns, what string
	bound    time.Duration
	env      string // the adjustment it must get
}

// TestFrozenPlugin: a stub-based plugin stopped with SIGSTOP, sent a
// CreateContainer too large for the socket buffer (400 environment
// variables of 1 KB), must not hold the call past its request timeout,
// and is disconnected. Meanwhile, small creations every 20 ms:
//   - in the frozen plugin's scope: they return within twice the request
//     timeout, with the healthy plugin's adjustment;
//   - outside it, sent to a plugin that also gets the frozen plugin's
//     creations after it ("healthy"): the same bound, since each plugin
//     gets events in the order they started, so they wait behind the
//     stuck creation at most the frozen plugin's request timeout;
//   - sent only to a plugin that shares nothing with the frozen one
//     ("bystander"): they do not wait for the frozen plugin at all
//     (within the request timeout).
//
// Then, with a second plugin frozen in the middle of such a write,
// Adaptation.Stop is bounded by the request timeout, not by the plugin.
// Guards against issue 13, problem 1: a trunk write without a deadline
// held every caller for 40 s.
func TestFrozenPlugin(t *testing.T) {
	checkLeaks(t)
	rt := startRuntime(t)
	startStub(t, rt, "20", "healthy", "-namespaces", "frozen,other", "-env", "HEALTHY=1")
	startStub(t, rt, "30", "bystander", "-namespaces", "isolated", "-env", "BYSTANDER=1")
	frozen := startStub(t, rt, "10", "frozen", "-namespaces", "frozen", "-env", "FROZEN=1")
	frozen2 := startStub(t, rt, "11", "frozen2", "-namespaces", "frozen2", "-env", "FROZEN2=1")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	frozen.signal(t, syscall.SIGSTOP)
	bound := 2 * requestTimeout
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[concern][]creation{}
		bigDone = make(chan struct{})
	)
	run := func(c concern, id string, env int) {
		rsp, took, err := rt.create(ctx, testPod(c.ns, c.ns+"-pod"), testCtr(c.ns+"-pod", id, env, 1024))
		mu.Lock()
		defer mu.Unlock()
		results[c] = append(results[c], creation{id, rsp, took, err})
	}
	large := concern{"frozen", "large, frozen plugin's scope", bound, "HEALTHY"}
	small := []concern{
		{"frozen", "small, frozen plugin's scope", bound, "HEALTHY"},
		{"other", "small, sharing a plugin with the frozen one", bound, "HEALTHY"},
		{"isolated", "small, sharing no plugin with the frozen one", requestTimeout, "BYSTANDER"},
	}
	wg.Go(func() {
		defer close(bigDone)
		run(large, "big", 400)
	})
loop:
	for i := 0; ; i++ {
		select {
		case <-bigDone:
			break loop
		case <-time.After(20 * time.Millisecond):
			for _, c := range small {
				wg.Go(func() { run(c, fmt.Sprintf("%s%d", c.ns, i), 1) })
			}
		}
	}
	wg.Wait()
	for c, cs := range results {
		var slowest time.Duration
		for _, r := range cs {
			slowest = max(slowest, r.took)
			if r.err != nil {
				t.Errorf("%s: CreateContainer %s failed after %v: %v", c.what, r.what, r.took, r.err)
				continue
			}
			if r.took > c.bound {
				t.Errorf("%s: CreateContainer %s took %v, above its bound of %v", c.what, r.what, r.took, c.bound)
			}
			env := envOf(r.rsp)
			if env[c.env] != "1" {
				t.Errorf("%s: CreateContainer %s: adjustment of %s missing: %v", c.what, r.what, c.env, env)
			}
			if _, ok := env["FROZEN"]; ok {
				t.Errorf("%s: CreateContainer %s: the frozen plugin's adjustment is present", c.what, r.what)
			}
		}
		t.Logf("%s: %d creations, slowest %v (bound %v)", c.what, len(cs), slowest, c.bound)
	}
	for _, c := range small {
		if len(results[c]) == 0 {
			t.Errorf("%s: no creation ran while the large one was stuck", c.what)
		}
	}
	rt.waitGone(t, "10-frozen", bound+slack)

	// Stop while a second frozen plugin is in the middle of a write that
	// does not fit in its socket buffer.
	frozen2.signal(t, syscall.SIGSTOP)
	stuck := make(chan creation, 1)
	go func() {
		rsp, took, err := rt.create(ctx, testPod("frozen2", "f2pod"), testCtr("f2pod", "big2", 400, 1024))
		stuck <- creation{"large, second frozen plugin's scope", rsp, took, err}
	}()
	time.Sleep(100 * time.Millisecond)
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	start := time.Now()
	if err := rt.a.Stop(sctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	within(t, "Stop with a frozen plugin", time.Since(start), 2*requestTimeout+slack)
	select {
	case c := <-stuck:
		within(t, "CreateContainer interrupted by Stop", c.took, 2*requestTimeout+slack)
		t.Logf("CreateContainer interrupted by Stop: err=%v", c.err)
	case <-time.After(2*requestTimeout + slack):
		t.Error("CreateContainer to the frozen plugin did not return after Stop")
		<-stuck
	}
}
