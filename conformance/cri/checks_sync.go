package cri

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nrikit/nrikit/api"
)

// Names of the Synchronize checks.
const (
	CheckSyncLate    = "late plugin synchronized with pods and containers"
	CheckSyncLost    = "no container lost around Synchronize"
	CheckSyncTimeout = "Synchronize held past the request timeout"
)

var syncChecks = []Check{
	{
		ID: "sync-late", Name: CheckSyncLate, run: syncLate,
		Decides: "a plugin that registers after a pod and its running container exist gets both in Synchronize, " +
			"with their IDs, the container's pod and state CONTAINER_RUNNING",
	},
	{
		ID: "sync-lost", Name: CheckSyncLost, Needs: []Need{NeedHold}, Serial: true, run: syncLost,
		Decides: "a container created before a plugin's Synchronize is in it; one whose CreateContainer is issued " +
			"while the plugin holds Synchronize (up to the hold budget) reaches it in Synchronize or as " +
			"CreateContainer; one created after reaches it as CreateContainer (containerd#13698, cri-o#10090)",
	},
	{
		ID: "sync-timeout", Name: CheckSyncTimeout, Serial: true, run: syncTimeout,
		Decides: "informational, never fails: a plugin answers Synchronize only a second after the request timeout " +
			"while a container is created; the report says what the runtime did with the plugin and whether the " +
			"container reached it (what a test that holds Synchronize as long as the timeout, as cri-tools' test of " +
			"containerd#13698 does, sees)",
	},
}

// synced reports whether a Synchronize carried the pod or container id.
func (s syncState) hasPod(id string) bool {
	return slices.ContainsFunc(s.pods, func(p *api.PodSandbox) bool { return p.GetId() == id })
}

func (s syncState) container(id string) *api.Container {
	for _, c := range s.ctrs {
		if c.GetId() == id {
			return c
		}
	}
	return nil
}

func syncLate(r *run) verdict {
	podID, _, ctrID, err := r.podWithContainer()
	if err != nil {
		return fail("%v", err)
	}
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}})
	if err != nil {
		return fail("%v", err)
	}
	st := p.synchronized()
	var f findings
	f.check(st.hasPod(podID), "Synchronize (%d pods) lacks the pod %s", len(st.pods), short(podID))
	switch c := st.container(ctrID); {
	case c == nil:
		f.problem("Synchronize (%d containers) lacks the container %s", len(st.ctrs), short(ctrID))
	default:
		f.check(c.GetPodSandboxId() == podID, "the container's pod_sandbox_id is %q, want %q", c.GetPodSandboxId(), podID)
		f.check(c.GetState() == api.ContainerState_CONTAINER_RUNNING, "the container's state is %s, want CONTAINER_RUNNING", c.GetState())
	}
	f.saw("Synchronize had %d pods and %d containers, the check's among them", len(st.pods), len(st.ctrs))
	return f.verdict()
}

// lateSync connects a plugin subscribed to CreateContainer whose
// Synchronize answer waits for hold, registers it in the background, and
// returns once Synchronize has begun (at syncAt).
func (r *run) lateSync(hold func(ctx context.Context)) (p *plugin, registered <-chan callResult, syncAt time.Time, err error) {
	inSync := make(chan time.Time, 1)
	spec := pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}, OnSync: func(ctx context.Context, _ []*api.PodSandbox, _ []*api.Container) {
		inSync <- time.Now()
		hold(ctx)
	}}
	full := api.FullPluginName("50", fmt.Sprintf("nri-check-%s-late-%s", r.check.ID, r.nonce))
	// The registration holds the run's sync gate until it ends
	// (env.syncGate), from before the plugin connects.
	r.syncGate.Lock()
	if p, err = r.dialPlugin(spec, full); err != nil {
		r.syncGate.Unlock()
		return nil, nil, time.Time{}, err
	}
	registered = background(func() (string, error) {
		defer r.syncGate.Unlock()
		_, err := p.register(r.ctx, registerTimeout)
		return "", err
	})
	select {
	case syncAt = <-inSync:
		return p, registered, syncAt, nil
	case res := <-registered:
		return nil, nil, time.Time{}, fmt.Errorf("the plugin registered without its Synchronize being held: %v", res.err)
	case <-r.ctx.Done():
		return nil, nil, time.Time{}, fmt.Errorf("no Synchronize: %w", r.ctx.Err())
	}
}

func syncLost(r *run) verdict {
	podID, pod, before, err := r.podWithContainer()
	if err != nil {
		return fail("%v", err)
	}
	release := make(chan struct{})
	var released time.Time
	p, registered, syncAt, err := r.lateSync(func(ctx context.Context) {
		t := time.NewTimer(r.holdFor())
		defer t.Stop()
		select {
		case <-release:
		case <-t.C:
		case <-ctx.Done():
		}
		released = time.Now()
	})
	if err != nil {
		return fail("%v", err)
	}
	issued := time.Now()
	during := background(func() (string, error) { return r.newContainer(podID, pod, nil) })
	// Give the CreateContainer time to reach the runtime while
	// Synchronize is held, within the hold's budget.
	wait := min(time.Second, r.holdFor()-time.Since(syncAt)-100*time.Millisecond)
	select {
	case <-time.After(wait):
	case <-r.ctx.Done():
	}
	close(release)
	reg, err := r.await(registered)
	if err != nil || reg.err != nil {
		return fail("the plugin's registration: %v %v", err, reg.err)
	}
	dur, err := r.await(during)
	if err != nil {
		return fail("%v", err)
	}
	if dur.err != nil {
		return fail("the container created during Synchronize: %v", dur.err)
	}
	after, err := r.newContainer(podID, pod, nil)
	if err != nil {
		return fail("%v", err)
	}
	st := p.synchronized()
	var f findings
	f.check(st.container(before) != nil, "the container created before Synchronize (%s) is not in it", short(before))
	for _, c := range []struct{ what, id string }{{"during", dur.id}, {"after", after}} {
		inSync := st.container(c.id) != nil
		_, evErr := r.waitKind(p, api.Event_CREATE_CONTAINER, "", c.id)
		switch {
		case inSync && evErr == nil:
			f.saw("%s: in Synchronize and as CreateContainer", c.what)
		case inSync:
			f.saw("%s: in Synchronize", c.what)
		case evErr == nil:
			f.saw("%s: as CreateContainer", c.what)
		default:
			f.problem("the container created %s Synchronize (%s) reached the plugin neither in Synchronize nor as CreateContainer", c.what, short(c.id))
		}
	}
	f.saw("CreateContainer issued %s into a Synchronize held %s; it returned %s after the release",
		issued.Sub(syncAt).Round(time.Millisecond), released.Sub(syncAt).Round(time.Millisecond), signedRound(dur.at.Sub(released)))
	return f.verdict()
}

// signedRound renders a duration that may be negative.
func signedRound(d time.Duration) string {
	s := d.Round(time.Millisecond).String()
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func syncTimeout(r *run) verdict {
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	p, registered, syncAt, err := r.lateSync(func(context.Context) {
		// Past the runtime's deadline: the request's context is ignored.
		t := time.NewTimer(r.timeout + time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.ctx.Done():
		}
	})
	if err != nil {
		return fail("%v", err)
	}
	created := background(func() (string, error) { return r.newContainer(podID, pod, nil) })
	reg, err := r.await(registered)
	if err != nil {
		return fail("%v", err)
	}
	ctr, err := r.await(created)
	if err != nil {
		return fail("%v", err)
	}
	var what []string
	if ctr.err != nil {
		what = append(what, fmt.Sprintf("the container created meanwhile failed after %s: %v", ctr.at.Sub(syncAt).Round(time.Millisecond), ctr.err))
	}
	// The runtime decided at its timeout, a second before the answer.
	dropped := false
	t := time.NewTimer(time.Second)
	select {
	case <-p.closed():
		dropped = true
		what = append(what, fmt.Sprintf("the runtime dropped the plugin (closed its connection %s after Synchronize began)", time.Since(syncAt).Round(100*time.Millisecond)))
	case <-t.C:
		what = append(what, "the runtime kept the plugin")
	}
	t.Stop()
	if reg.err != nil {
		what = append(what, "its registration: "+reg.err.Error())
	}
	if ctr.err == nil {
		reached := p.synchronized().container(ctr.id) != nil
		if !reached && !dropped {
			_, err := r.waitKind(p, api.Event_CREATE_CONTAINER, "", ctr.id)
			reached = err == nil
		}
		if !reached {
			reached = slices.ContainsFunc(p.seen(), func(ev *event) bool { return ev.Ctr.GetId() == ctr.id })
		}
		if reached {
			what = append(what, "the container created meanwhile reached it")
		} else {
			what = append(what, "the container created meanwhile never reached it")
		}
	}
	return info("%s", strings.Join(what, "; "))
}
