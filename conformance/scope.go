package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/internal/outputsummary"
)

// A plugin's scope (ConfigureResponse.scope, an nrikit extension) is
// checked twice. As nrikit's runtime, the checker compiles it with the
// runtime's own code (an invalid scope fails CheckScope, as the runtime
// refuses the plugin) and sends events only about objects in it: the
// objects of the checker's world are brought into the scope where the
// scope says how (filter.Filter.Satisfy), and left out of Synchronize and
// the lifecycle where it does not (a CEL expression). Then, as a runtime
// that does not evaluate scopes (containerd, CRI-O, which never advertise
// their events), it starts the plugin a second time and sends it the
// lifecycle of a pod outside the scope: CheckScopeKept passes if the
// plugin leaves it unchanged, answering without adjustments or opting out.

// Names of the scope checks.
const (
	CheckScope     = "scope valid"
	CheckScopeKept = "leaves pods outside its scope unchanged"
)

// compileScope compiles a declared scope as nrikit's runtime does.
func compileScope(scope *api.PluginScope) (*filter.Filter, error) {
	return filter.Compile(scope, filter.WithCEL(celscope.Compile))
}

// checkScope compiles the scope of the plugin's Configure answer and
// records CheckScope; it rejects the plugin if the scope is invalid.
func (c *pluginCheck) checkScope(resp *api.ConfigureResponse) bool {
	f, err := compileScope(resp.GetScope())
	if err != nil {
		reason := "declared an invalid scope: " + strings.TrimPrefix(err.Error(), "filter: ")
		c.rec.fail(CheckScope, 0, "%s", reason)
		c.reject(codes.InvalidArgument, "plugin %q %s", c.full, reason)
		return false
	}
	where := c.grantWhere()
	if f.MatchesAll() {
		c.rec.pass(CheckScope, 0, "none: every pod and container")
		if where != nil {
			c.world.bringInto(where)
		}
		return true
	}
	c.scope = f
	c.outsidePod, c.outsideCtr = c.world.outsideOf(f)
	if n := c.world.bringInto(filter.And(f, where)); n == 0 {
		c.rec.pass(CheckScope, 0, "%s; no pod of the checker's could be brought into it (it has a CEL expression), so the plugin is sent no events about pods", f)
		return true
	}
	c.rec.pass(CheckScope, 0, "%s; the checker's pods are in it", f)
	return true
}

// bringInto changes the world's objects so that f matches them, where f
// says how, and drops from it those it cannot change; it returns how many
// objects are left in scope. The new pod and container are kept for the
// lifecycle only if they could be brought into scope.
func (w *world) bringInto(f *filter.Filter) int {
	var pods []*api.PodSandbox
	var ctrs []*api.Container
	for i, pod := range w.pods {
		ctr := w.containers[i]
		if f.Satisfy(pod, ctr) {
			pods, ctrs = append(pods, pod), append(ctrs, ctr)
		}
	}
	w.pods, w.containers = pods, ctrs
	w.newInScope = f.Satisfy(w.newPod, w.newCtr)
	n := len(pods)
	if w.newInScope {
		n++
	}
	return n
}

// outsideOf returns a copy of the world's new pod and container outside
// f's scope, or nil, nil if f matches whatever the checker makes of them.
func (w *world) outsideOf(f *filter.Filter) (*api.PodSandbox, *api.Container) {
	pod := proto.Clone(w.newPod).(*api.PodSandbox)
	ctr := proto.Clone(w.newCtr).(*api.Container)
	pod.Id, pod.Uid, pod.Name = "conformance-pod-outside", "uid-conformance-pod-outside", "outside-0"
	ctr.Id, ctr.PodSandboxId = "conformance-ctr-outside", pod.Id
	if !f.MatchContainer(pod, ctr) && !f.MatchPod(pod) {
		return pod, ctr
	}
	pod.Namespace, pod.Labels, pod.Annotations, pod.RuntimeHandler = "nri-conformance-outside", nil, nil, "nri-conformance-none"
	ctr.Name, ctr.Annotations, ctr.Image = "outside", nil, &api.Image{Name: "outside.invalid/none:0"}
	if f.MatchContainer(pod, ctr) {
		return nil, nil
	}
	return pod, ctr
}

// scopeKept starts the plugin a second time, configures it as a runtime
// that does not evaluate scopes, sends it the lifecycle of a pod outside
// its scope, and records CheckScopeKept.
func (c *pluginCheck) scopeKept(ctx context.Context) {
	if c.scope == nil {
		return
	}
	pod, ctr := c.outsidePod, c.outsideCtr
	if pod == nil {
		c.rec.info(CheckScopeKept, 0, "every pod the checker can make is in the scope %s", c.scope)
		return
	}
	if c.cfg.Listen != "" || c.cfg.Listener != nil {
		c.rec.skip(CheckScopeKept, "an external plugin connects once: check it launched (nri check plugin -- COMMAND) to see it under a runtime that does not evaluate scopes")
		return
	}
	start := time.Now()
	second, stop, err := c.startAgain(ctx)
	if err != nil {
		c.rec.fail(CheckScopeKept, time.Since(start), "starting the plugin a second time: %v", err)
		return
	}
	defer stop()
	problems, sent, err := second.outsideLifecycle(ctx, pod, ctr)
	d := time.Since(start)
	where := pod.GetNamespace() + "/" + pod.GetName()
	switch {
	case err != nil:
		c.rec.fail(CheckScopeKept, d, "configured as a runtime that does not evaluate scopes: %v", err)
	case len(problems) > 0:
		c.rec.fail(CheckScopeKept, d, "configured as a runtime that does not evaluate scopes (containerd, CRI-O), it changed %s, outside its scope %s: %s",
			where, c.scope, strings.Join(problems, "; "))
	default:
		c.rec.pass(CheckScopeKept, d, "configured as a runtime that does not evaluate scopes: %d events about %s, outside its scope, left it unchanged", sent, where)
	}
}

// outsideLifecycle configures the plugin as a runtime that does not
// evaluate scopes, synchronizes it with the pod outside its scope and
// sends it that pod's lifecycle; it returns what the plugin changed of
// the pod and the number of events sent.
func (c *pluginCheck) outsideLifecycle(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]string, int, error) {
	req := &api.ConfigureRequest{
		Config:              c.cfg.Config,
		RuntimeName:         CheckerRuntimeName,
		RuntimeVersion:      CheckerRuntimeVersion,
		RegistrationTimeout: ms(c.cfg.RegistrationTimeout),
		RequestTimeout:      ms(c.cfg.RequestTimeout),
		NRIVersion:          api.NRIVersion,
	}
	c.configureReq = req
	var resp *api.ConfigureResponse
	if _, err := c.callTimeout(ctx, func(ctx context.Context) (err error) {
		resp, err = c.plugin.Configure(ctx, req)
		return err
	}); err != nil {
		return nil, 0, fmt.Errorf("Configure: %s", describeCallError(err))
	}
	if c.sess != nil {
		c.reg.answer <- nil
	}
	subscribed := api.EventMask(resp.GetEvents())
	if subscribed == 0 {
		subscribed = api.AllEvents
	}
	var problems []string
	outside := map[string]bool{ctr.GetId(): true}
	var sync *api.SynchronizeResponse
	if _, err := c.callTimeout(ctx, func(ctx context.Context) (err error) {
		sync, err = c.plugin.Synchronize(ctx, &api.SynchronizeRequest{Pods: []*api.PodSandbox{pod}, Containers: []*api.Container{ctr}})
		return err
	}); err != nil {
		return nil, 0, fmt.Errorf("Synchronize: %s", describeCallError(err))
	}
	problems = append(problems, touched("Synchronize", sync, pod, ctr, outside)...)
	w := &world{newPod: pod, newCtr: ctr}
	sent := 1
	for _, ev := range lifecycle {
		if !subscribed.IsSet(ev) {
			continue
		}
		dl := c.deliver(ctx, w, ev)
		sent++
		if dl.err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s", ev.Name(), describeCallError(dl.err)))
			continue
		}
		problems = append(problems, touched(ev.Name(), dl.resp, pod, ctr, outside)...)
	}
	_, _ = c.callTimeout(ctx, func(ctx context.Context) error {
		_, err := c.plugin.Shutdown(ctx, &api.Empty{})
		return err
	})
	return problems, sent, nil
}

// touched lists what an answer about pod and ctr, outside the plugin's
// scope, changes of them: an adjustment (unless the answer opts out of
// them), updates or evictions of containers outside the scope, a
// rejection of their validation.
func touched(what string, ans proto.Message, pod *api.PodSandbox, ctr *api.Container, outside map[string]bool) []string {
	var out []string
	targets := func(updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) {
		for _, u := range updates {
			if outside[u.GetContainerId()] {
				out = append(out, fmt.Sprintf("%s: updates container %s", what, u.GetContainerId()))
			}
		}
		for _, e := range evictions {
			if outside[e.GetContainerId()] {
				out = append(out, fmt.Sprintf("%s: evicts container %s", what, e.GetContainerId()))
			}
		}
	}
	switch a := ans.(type) {
	case *api.SynchronizeResponse:
		targets(a.GetUpdate(), nil)
	case *api.CreateContainerResponse:
		if proto.Size(a.GetAdjust()) > 0 && !optsOut(a.GetOptOut(), pod, ctr) {
			out = append(out, fmt.Sprintf("%s: adjusts the container (%s) without opting out of it", what, summarize(a)))
		}
		targets(a.GetUpdate(), a.GetEvict())
	case *api.UpdateContainerResponse:
		targets(a.GetUpdate(), a.GetEvict())
	case *api.StopContainerResponse:
		targets(a.GetUpdate(), nil)
	case *api.ValidateContainerAdjustmentResponse:
		if a.GetReject() {
			out = append(out, fmt.Sprintf("%s: rejects the container: %s", what, a.GetReason()))
		}
	}
	return out
}

// optsOut reports whether an opt-out names the pod or the container.
func optsOut(o *api.OptOut, pod *api.PodSandbox, ctr *api.Container) bool {
	for _, id := range o.GetPodIds() {
		if id == pod.GetId() {
			return true
		}
	}
	for _, id := range o.GetContainerIds() {
		if id == ctr.GetId() {
			return true
		}
	}
	return false
}

// startAgain starts a second instance of the plugin, as the first was
// started (launched, or loaded as a WASM module), and waits for a launched
// one to register; stop ends it.
func (c *pluginCheck) startAgain(ctx context.Context) (*pluginCheck, func(), error) {
	second := &pluginCheck{cfg: c.cfg, world: newWorld(), inst: c.inst, full: c.full}
	if c.wasm != nil {
		second.wasm = &wasmTarget{output: outputsummary.New(0, c.cfg.Output)}
		if !second.loadWASM(ctx) {
			return nil, nil, errors.New(second.lastReason())
		}
		return second, func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ExitTimeout)
			defer cancel()
			_ = second.wasm.plugin.Close(cctx)
		}, nil
	}
	idx, name, _ := api.ParsePluginName(c.cfg.Name)
	proc, conn, err := launch(c.cfg.Command, idx, name, c.cfg.Env, c.cfg.Output)
	if err != nil {
		return nil, nil, err
	}
	second.proc = proc
	ok, err := second.connect(conn)
	if !ok {
		proc.kill()
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.New(second.lastReason())
	}
	stop := func() {
		_ = second.sess.close()
		proc.kill()
	}
	if !second.register(ctx) {
		stop()
		return nil, nil, errors.New(second.lastReason())
	}
	return second, stop, nil
}

// lastReason is the reason of the last check recorded.
func (c *pluginCheck) lastReason() string {
	if r := c.rec.report.Results; len(r) > 0 {
		return r[len(r)-1].Reason
	}
	return "no reason recorded"
}

// describeScope renders a declared scope for the Configure line: "none",
// its criteria, or "invalid" (CheckScope says why).
func describeScope(scope *api.PluginScope) string {
	f, err := compileScope(scope)
	switch {
	case err != nil:
		return "invalid"
	case f.MatchesAll():
		return "none"
	}
	return f.String()
}
