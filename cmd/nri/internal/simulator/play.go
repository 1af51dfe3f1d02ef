package simulator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/ocispec"
)

// Play runs the scenario's steps through the runtime and returns the
// report. It can be called once, after Start.
func (s *Simulator) Play(ctx context.Context) (*report.Report, error) {
	s.mu.Lock()
	a, played := s.a, s.played
	s.played = true
	s.mu.Unlock()
	if a == nil {
		return nil, errors.New("not started")
	}
	if played {
		return nil, errors.New("already played")
	}
	s.checkLaunched(a)
	s.members.see(a.Plugins())
	start := time.Now()
	var failures []string
	for i, st := range s.sc.Steps {
		if err := ctx.Err(); err != nil {
			failures = append(failures, fmt.Sprintf("step %d (%s %s): not run: %v", i+1, st.Action, st.Target(), err))
			break
		}
		s.members.step.Store(int64(i + 1))
		msgs := []string{s.play(ctx, a, i+1, st)}
		msgs = append(msgs, s.judgeRefusals(i+1, st)...)
		for _, msg := range msgs {
			if msg != "" {
				failures = append(failures, fmt.Sprintf("step %d (%s %s): %s", i+1, st.Action, st.Target(), msg))
			}
		}
		s.members.see(a.Plugins())
	}
	s.members.step.Store(0)
	took := time.Since(start)
	return s.report(a, took, failures), nil
}

// judgeRefusals compares the answers the runtime refused in the events of
// step n with the plugins the step expects refused; it returns what was
// not as expected. An unexpected refusal marks its event as not OK.
func (s *Simulator) judgeRefusals(n int, st *scenario.Step) []string {
	s.tl.mu.Lock()
	defer s.tl.mu.Unlock()
	var msgs []string
	refused := map[string]bool{}
	for _, e := range s.tl.events {
		if e.Step != n {
			continue
		}
		for i := range e.Calls {
			c := &e.Calls[i]
			if !c.Refused {
				continue
			}
			refused[c.Plugin] = true
			if st.ExpectsRefusal(c.Plugin) {
				c.Expected = true
				continue
			}
			e.OK = false
			msgs = append(msgs, fmt.Sprintf("the runtime refused %s's answer to %s, which the step does not expect (expectRefused): %s",
				c.Plugin, e.Event, refusalReason(c)))
		}
	}
	for _, p := range st.ExpectRefused {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(refused)), func(full string) bool { return scenario.NamesPlugin(p, full) }) {
			msgs = append(msgs, fmt.Sprintf("expected the runtime to refuse %s's answer (expectRefused), but it refused none of its answers", p))
		}
	}
	return msgs
}

// refusalReason is what a refused call's report says about it: its
// violations, or its error.
func refusalReason(c *report.Call) string {
	if len(c.Violations) == 0 {
		return c.Error
	}
	var vs []string
	for _, v := range c.Violations {
		vs = append(vs, v.String())
	}
	return strings.Join(vs, "; ")
}

// checkLaunched records the launched plugins that are not active as
// registration failures (the tap has usually recorded why already).
func (s *Simulator) checkLaunched(a *adaptation.Adaptation) {
	active := map[string]bool{}
	for _, p := range a.Plugins() {
		if p.State == adaptation.StateActive {
			active[p.FullName()] = true
		}
	}
	known := map[string]bool{}
	for _, e := range s.registrationErrors() {
		known[e.Plugin] = true
	}
	for _, p := range s.installed {
		if !active[p.full] && !known[p.full] {
			s.registrationFailed(p.full, "the plugin did not register (see its log output)")
		}
	}
}

// play runs one step; it returns why the outcome was not the expected
// one, or "".
func (s *Simulator) play(ctx context.Context, a *adaptation.Adaptation, n int, st *scenario.Step) string {
	var err error
	var rec *report.Event
	switch st.Action {
	case scenario.RunPod:
		rec, err = s.runPod(ctx, a, n, st)
	case scenario.StopPod:
		rec, err = s.stopPod(ctx, a, n, st)
	case scenario.RemovePod:
		rec, err = s.removePod(ctx, a, n, st)
	default:
		c := s.store.ctrs[st.Container.ID]
		if msg := s.precondition(st, c); msg != "" {
			return "skipped: " + msg
		}
		switch st.Action {
		case scenario.CreateContainer:
			rec, err = s.createContainer(ctx, a, n, c)
		case scenario.StartContainer:
			rec, err = s.startContainer(ctx, a, n, c)
		case scenario.UpdateContainer:
			rec, err = s.updateContainer(ctx, a, n, c, st.Resources)
		case scenario.StopContainer:
			rec, err = s.stopContainer(ctx, a, n, c)
		case scenario.RemoveContainer:
			rec, err = s.removeContainer(ctx, a, n, c)
		}
	}
	return s.judge(rec, st, err)
}

// judge compares a step's outcome with the expected one.
func (s *Simulator) judge(rec *report.Event, st *scenario.Step, err error) string {
	var msg string
	switch {
	case st.ExpectError == "" && err != nil:
		msg = "unexpected error: " + err.Error()
	case st.ExpectError != "" && err == nil:
		msg = fmt.Sprintf("succeeded, but an error containing %q was expected", st.ExpectError)
	case st.ExpectError != "" && !strings.Contains(err.Error(), st.ExpectError):
		msg = fmt.Sprintf("failed with %q, but an error containing %q was expected", err.Error(), st.ExpectError)
	case st.Expect != nil && err == nil:
		msg = s.checkExpect(st)
	}
	if rec != nil {
		s.tl.mu.Lock()
		rec.ExpectedError = st.ExpectError
		rec.OK = msg == ""
		s.tl.mu.Unlock()
	}
	return msg
}

// checkExpect compares the container's spec after the step with the
// step's expect; it returns what is missing, or "".
func (s *Simulator) checkExpect(st *scenario.Step) string {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	spec := s.store.ctrs[st.Container.ID].spec
	var env []string
	var annotations map[string]string
	if spec != nil {
		annotations = spec.Annotations
		if spec.Process != nil {
			env = spec.Process.Env
		}
	}
	var missingEnv, missingAnnotations []string
	for _, kv := range st.Expect.Env {
		if !slices.Contains(env, kv) {
			missingEnv = append(missingEnv, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.Expect.Annotations)) {
		if got, ok := annotations[k]; !ok || got != st.Expect.Annotations[k] {
			missingAnnotations = append(missingAnnotations, k+"="+st.Expect.Annotations[k])
		}
	}
	var missing []string
	if len(missingEnv) > 0 {
		missing = append(missing, "env "+strings.Join(missingEnv, ", "))
	}
	if len(missingAnnotations) > 0 {
		missing = append(missing, "annotations "+strings.Join(missingAnnotations, ", "))
	}
	if res := missingResources(spec, st.Expect.Resources); len(res) > 0 {
		missing = append(missing, "resources "+strings.Join(res, ", "))
	}
	if len(missing) == 0 {
		return ""
	}
	return "the container's spec lacks the expected " + strings.Join(missing, "; ")
}

// precondition checks at run time what the scenario check assumed: an
// earlier step that failed unexpectedly can leave a container in another
// state.
func (s *Simulator) precondition(st *scenario.Step, c *container) string {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	switch st.Action {
	case scenario.CreateContainer:
		if !c.pod.listed {
			return fmt.Sprintf("pod %q is not running", c.pod.sc.Name)
		}
	default:
		if !c.listed {
			return fmt.Sprintf("container %q is %s", c.sc.Name, c.status)
		}
	}
	return ""
}

// call runs one runtime call with a timeline record.
func (s *Simulator) call(ctx context.Context, n int, e api.Event, p *pod, c *container, f func(context.Context) error) (*report.Event, error) {
	ctx, r := s.tl.begin(ctx, n, e, p, c)
	start := time.Now()
	err := f(ctx)
	s.tl.finish(r[e], time.Since(start), err)
	return r[e], err
}

func (s *Simulator) runPod(ctx context.Context, a *adaptation.Adaptation, n int, st *scenario.Step) (*report.Event, error) {
	p := s.store.pods[st.Pod.Name]
	s.store.mu.Lock()
	p.pb = s.store.podSandbox(p.sc, s.store.pid(), len(s.store.pods)+int(s.store.nextPID%200))
	p.listed = true
	pb := api.Clone(p.pb)
	s.store.mu.Unlock()
	rec, err := s.call(ctx, n, api.Event_RUN_POD_SANDBOX, p, nil, func(ctx context.Context) error {
		return a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pb})
	})
	if err != nil {
		// A pod that failed to start is removed again.
		s.store.mu.Lock()
		p.listed = false
		s.store.mu.Unlock()
		_, _ = s.call(ctx, n, api.Event_REMOVE_POD_SANDBOX, p, nil, func(ctx context.Context) error {
			return a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pb})
		})
	}
	return rec, err
}

func (s *Simulator) podOf(st *scenario.Step) (*pod, *api.PodSandbox) {
	p := s.store.pods[st.Pod.Name]
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return p, api.Clone(p.pb)
}

func (s *Simulator) stopPod(ctx context.Context, a *adaptation.Adaptation, n int, st *scenario.Step) (*report.Event, error) {
	p, pb := s.podOf(st)
	return s.call(ctx, n, api.Event_STOP_POD_SANDBOX, p, nil, func(ctx context.Context) error {
		return a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pb})
	})
}

func (s *Simulator) removePod(ctx context.Context, a *adaptation.Adaptation, n int, st *scenario.Step) (*report.Event, error) {
	p, pb := s.podOf(st)
	s.store.mu.Lock()
	p.listed = false
	s.store.mu.Unlock()
	return s.call(ctx, n, api.Event_REMOVE_POD_SANDBOX, p, nil, func(ctx context.Context) error {
		return a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pb})
	})
}

// snapshot returns the container's pod and description.
func (s *Simulator) snapshot(c *container) (*api.PodSandbox, *api.Container) {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return api.Clone(c.pod.pb), c.toAPI()
}

func (s *Simulator) createContainer(ctx context.Context, a *adaptation.Adaptation, n int, c *container) (*report.Event, error) {
	s.store.mu.Lock()
	c.proposed = newSpec(s.store.kube, c.pod.sc, c.sc, c.pod.pb.GetPid())
	c.spec = newSpec(s.store.kube, c.pod.sc, c.sc, c.pod.pb.GetPid())
	c.state, c.createdAt, c.listed = api.ContainerState_CONTAINER_UNKNOWN, now(), true
	s.store.mu.Unlock()
	pb, ctr := s.snapshot(c)

	cctx, r := s.tl.begin(ctx, n, api.Event_CREATE_CONTAINER, c.pod, c, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	rec, vrec := r[api.Event_CREATE_CONTAINER], r[api.Event_VALIDATE_CONTAINER_ADJUSTMENT]
	start := time.Now()
	rsp, err := a.CreateContainer(cctx, &api.CreateContainerRequest{Pod: pb, Container: ctr})
	if err == nil {
		err = s.applyCreate(c, rsp)
	}
	s.tl.finish(rec, time.Since(start), err)
	s.finishValidation(vrec, err)

	if err != nil {
		s.store.mu.Lock()
		c.listed, c.status, c.err = false, "failed", err.Error()
		c.spec = c.proposed
		s.store.mu.Unlock()
		// The runtime removes a container whose creation failed.
		_, _ = s.call(ctx, n, api.Event_REMOVE_CONTAINER, c.pod, c, func(ctx context.Context) error {
			return a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pb, Container: ctr})
		})
		return rec, err
	}
	s.store.mu.Lock()
	c.state, c.status = api.ContainerState_CONTAINER_CREATED, "created"
	s.store.mu.Unlock()
	pb, ctr = s.snapshot(c)
	_, _ = s.call(ctx, n, api.Event_POST_CREATE_CONTAINER, c.pod, c, func(ctx context.Context) error {
		return a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pb, Container: ctr})
	})
	return rec, nil
}

// finishValidation completes or drops the validation record of a
// creation: it stays if validators were asked.
func (s *Simulator) finishValidation(vrec *report.Event, err error) {
	var verr *adaptation.ValidationError
	var perr *adaptation.PluginError
	asked := len(vrec.Called) > 0 || errors.As(err, &verr) ||
		(errors.As(err, &perr) && perr.Op == api.Event_VALIDATE_CONTAINER_ADJUSTMENT.Name())
	if !asked {
		s.tl.drop(vrec)
		return
	}
	if verr != nil || perr != nil {
		s.tl.finish(vrec, 0, err)
	}
}

// applyCreate applies a creation's merged adjustment to the container's
// spec and its updates to other containers.
func (s *Simulator) applyCreate(c *container, rsp *api.CreateContainerResponse) error {
	s.store.mu.Lock()
	err := ocispec.Apply(c.spec, rsp.GetAdjust())
	s.store.mu.Unlock()
	if err != nil {
		return fmt.Errorf("applying the adjustment of container %q: %w", c.sc.Name, err)
	}
	return s.applyUpdates(rsp.GetUpdate())
}

// applyUpdates applies updates that plugins asked for in answer to an
// event.
func (s *Simulator) applyUpdates(updates []*api.ContainerUpdate) error {
	var errs []error
	for _, u := range updates {
		if _, err := s.store.applyUpdate(u); err != nil && !u.GetIgnoreFailure() {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Simulator) startContainer(ctx context.Context, a *adaptation.Adaptation, n int, c *container) (*report.Event, error) {
	pb, ctr := s.snapshot(c)
	rec, err := s.call(ctx, n, api.Event_START_CONTAINER, c.pod, c, func(ctx context.Context) error {
		return a.StartContainer(ctx, &api.StartContainerRequest{Pod: pb, Container: ctr})
	})
	if err != nil {
		return rec, err
	}
	s.store.mu.Lock()
	c.state, c.status, c.startedAt, c.pid = api.ContainerState_CONTAINER_RUNNING, "running", now(), s.store.pid()
	s.store.mu.Unlock()
	pb, ctr = s.snapshot(c)
	_, _ = s.call(ctx, n, api.Event_POST_START_CONTAINER, c.pod, c, func(ctx context.Context) error {
		return a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pb, Container: ctr})
	})
	return rec, nil
}

func (s *Simulator) updateContainer(ctx context.Context, a *adaptation.Adaptation, n int, c *container, res *scenario.Resources) (*report.Event, error) {
	pb, ctr := s.snapshot(c)
	want := ocispec.ToLinuxResources(resources(res))
	want.Devices = nil // the default deny rule is not part of an update
	rec, err := s.call(ctx, n, api.Event_UPDATE_CONTAINER, c.pod, c, func(ctx context.Context) error {
		rsp, err := a.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pb, Container: ctr, LinuxResources: want})
		if err != nil {
			return err
		}
		return s.applyUpdates(rsp.GetUpdate())
	})
	if err != nil {
		return rec, err
	}
	pb, ctr = s.snapshot(c)
	_, _ = s.call(ctx, n, api.Event_POST_UPDATE_CONTAINER, c.pod, c, func(ctx context.Context) error {
		return a.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pb, Container: ctr})
	})
	return rec, nil
}

func (s *Simulator) stopContainer(ctx context.Context, a *adaptation.Adaptation, n int, c *container) (*report.Event, error) {
	pb, ctr := s.snapshot(c)
	rec, err := s.call(ctx, n, api.Event_STOP_CONTAINER, c.pod, c, func(ctx context.Context) error {
		rsp, err := a.StopContainer(ctx, &api.StopContainerRequest{Pod: pb, Container: ctr})
		if err != nil {
			return err
		}
		return s.applyUpdates(rsp.GetUpdate())
	})
	// The container stops whatever the plugins answered.
	s.store.mu.Lock()
	c.state, c.status, c.finishedAt, c.pid = api.ContainerState_CONTAINER_STOPPED, "stopped", now(), 0
	s.store.mu.Unlock()
	return rec, err
}

func (s *Simulator) removeContainer(ctx context.Context, a *adaptation.Adaptation, n int, c *container) (*report.Event, error) {
	s.store.mu.Lock()
	c.listed, c.status = false, "removed"
	s.store.mu.Unlock()
	pb, ctr := s.snapshot(c)
	return s.call(ctx, n, api.Event_REMOVE_CONTAINER, c.pod, c, func(ctx context.Context) error {
		return a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pb, Container: ctr})
	})
}

// unsolicitedUpdate records an update a plugin asked for on its own.
func (s *Simulator) unsolicitedUpdate(_ context.Context, u *api.ContainerUpdate, target string, err error) {
	rec := &report.Event{Event: "UpdateContainers", Container: target, OK: true,
		Changes: fieldChanges("", target, "linux.resources.", u.GetLinux().GetResources())}
	if err != nil {
		rec.Error = err.Error()
	}
	s.tl.add(rec)
}

// unsolicitedEviction records an eviction a plugin asked for.
func (s *Simulator) unsolicitedEviction(_ context.Context, e *api.ContainerEviction, target string) {
	s.tl.add(&report.Event{Event: "EvictContainer", Container: target, OK: true, Error: "eviction requested: " + e.GetReason()})
}
