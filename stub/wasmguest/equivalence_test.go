//go:build !wasip1

package wasmguest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
	"github.com/nrikit/nrikit/stub/wasmguest/internal/equivplugin"
)

// equivGuest is equivplugin's plugin as a WASM module.
var equivGuest = &wasmtest.Guest{Pkg: "./testdata/equivguest", Name: "10-test"}

func TestMain(m *testing.M) {
	code := m.Run()
	equivGuest.Remove()
	os.Exit(code)
}

// answer is one side's answer to a request: the response, or the error's
// message as the runtime sees it.
type answer struct {
	rsp proto.Message
	err string
}

// processAnswer is the answer of the process, over ttrpc.
func processAnswer(rsp proto.Message, err error) answer {
	if err != nil {
		return answer{err: status.Convert(err).Message()}
	}
	return answer{rsp: rsp}
}

// wasmAnswer is the answer of the guest: its error string, as the
// runtime passes it on.
func wasmAnswer(t *testing.T, rsp proto.Message, err error) answer {
	t.Helper()
	var ce *wasmhost.CallError
	switch {
	case err == nil:
		return answer{rsp: rsp}
	case errors.As(err, &ce) && ce.Kind == wasmhost.KindGuest:
		return answer{err: ce.Message}
	}
	t.Fatalf("the guest failed: %v", err)
	return answer{}
}

// sameAnswer fails the test unless both sides answered step the same.
func sameAnswer(t *testing.T, step string, process, guest answer) {
	t.Helper()
	switch {
	case process.err != guest.err:
		t.Errorf("%s: the process answered error %q, the guest %q", step, process.err, guest.err)
	case process.err == "" && !proto.Equal(process.rsp, guest.rsp):
		t.Errorf("%s: answers differ:\nprocess %v\nguest   %v", step, process.rsp, guest.rsp)
	}
}

// call sends one request to both sides.
type call struct {
	name string
	// event is the request's event (0 for Shutdown), which a runtime
	// sends only to a plugin subscribed to it.
	event api.Event
	send  func(ctx context.Context, svc api.PluginService) (proto.Message, error)
}

// The pods and containers of the test. Scope admits the annotated
// containers of the pods of namespaces team-*.
var (
	on = map[string]string{equivplugin.AnnotationKey: "1"}

	podIn      = &api.PodSandbox{Id: "pod-in", Name: "in", Namespace: "team-a"}
	podOut     = &api.PodSandbox{Id: "pod-out", Name: "out", Namespace: "default"}
	podOptOut  = &api.PodSandbox{Id: "pod-optout", Name: "optout", Namespace: "team-b"}
	podNew     = &api.PodSandbox{Id: "pod-new", Name: "new", Namespace: "team-c"}
	podNewOut  = &api.PodSandbox{Id: "pod-new-out", Name: "new-out", Namespace: "kube-system"}
	syncedIn   = &api.Container{Id: "synced-in", Name: "synced-in", PodSandboxId: "pod-in", Annotations: on}
	syncedOut  = &api.Container{Id: "synced-out", Name: "synced-out", PodSandboxId: "pod-in"}
	syncedPod  = &api.Container{Id: "synced-pod-out", Name: "synced-pod-out", PodSandboxId: "pod-out", Annotations: on}
	statePods  = []*api.PodSandbox{podIn, podOut, podOptOut}
	stateCtrs  = []*api.Container{syncedIn, syncedOut, syncedPod}
	syncChunks = 2
)

// ctr returns a container of pod, annotated into the scope if annotated.
func ctr(pod *api.PodSandbox, name string, annotated bool) *api.Container {
	c := &api.Container{Id: "ctr-" + name, Name: name, PodSandboxId: pod.GetId()}
	if annotated {
		c.Annotations = on
	}
	return c
}

// sequence is the event sequence both sides get: events in and out of
// scope, containers whose annotations change after their creation, a
// failing and a panicking handler, opt-outs, a rejection.
func sequence() []call {
	created := ctr(podNew, "created", true)
	createdChanged := ctr(podNew, "created", false) // its annotation removed after creation
	skipped := ctr(podNew, "skipped", false)
	skippedChanged := ctr(podNew, "skipped", true) // annotated after creation
	pod := func(name string, e api.Event, p *api.PodSandbox) call {
		return call{name, e, func(ctx context.Context, svc api.PluginService) (proto.Message, error) {
			switch e {
			case api.Event_RUN_POD_SANDBOX:
				return svc.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: p})
			case api.Event_UPDATE_POD_SANDBOX:
				return svc.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: p, LinuxResources: &api.LinuxResources{}})
			case api.Event_POST_UPDATE_POD_SANDBOX:
				return svc.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: p})
			case api.Event_STOP_POD_SANDBOX:
				return svc.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: p})
			}
			return svc.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: p})
		}}
	}
	container := func(name string, e api.Event, p *api.PodSandbox, c *api.Container) call {
		return call{name, e, func(ctx context.Context, svc api.PluginService) (proto.Message, error) {
			switch e {
			case api.Event_CREATE_CONTAINER:
				return svc.CreateContainer(ctx, &api.CreateContainerRequest{Pod: p, Container: c})
			case api.Event_POST_CREATE_CONTAINER:
				return svc.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: p, Container: c})
			case api.Event_START_CONTAINER:
				return svc.StartContainer(ctx, &api.StartContainerRequest{Pod: p, Container: c})
			case api.Event_POST_START_CONTAINER:
				return svc.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: p, Container: c})
			case api.Event_UPDATE_CONTAINER:
				return svc.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: p, Container: c, LinuxResources: &api.LinuxResources{}})
			case api.Event_POST_UPDATE_CONTAINER:
				return svc.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: p, Container: c})
			case api.Event_STOP_CONTAINER:
				return svc.StopContainer(ctx, &api.StopContainerRequest{Pod: p, Container: c})
			case api.Event_VALIDATE_CONTAINER_ADJUSTMENT:
				return svc.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{Pod: p, Container: c})
			}
			return svc.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: p, Container: c})
		}}
	}
	return []call{
		pod("run a pod in scope", api.Event_RUN_POD_SANDBOX, podNew),
		pod("run a pod out of scope", api.Event_RUN_POD_SANDBOX, podNewOut),
		pod("run a pod the plugin opts out of", api.Event_RUN_POD_SANDBOX, &api.PodSandbox{Id: "p-o", Name: "optout", Namespace: "team-d"}),
		container("create a container in scope", api.Event_CREATE_CONTAINER, podNew, created),
		container("validate it", api.Event_VALIDATE_CONTAINER_ADJUSTMENT, podNew, created),
		container("create a container out of scope", api.Event_CREATE_CONTAINER, podNew, skipped),
		container("create a container of a pod out of scope", api.Event_CREATE_CONTAINER, podNewOut, ctr(podNewOut, "other", true)),
		container("create a container that fails", api.Event_CREATE_CONTAINER, podNew, ctr(podNew, "fail", true)),
		container("create a container that panics", api.Event_CREATE_CONTAINER, podNew, ctr(podNew, "panic", true)),
		container("create a container the plugin opts out of", api.Event_CREATE_CONTAINER, podNew, ctr(podNew, "optout", true)),
		container("create a container the validator rejects", api.Event_CREATE_CONTAINER, podNew, ctr(podNew, "reject", true)),
		container("validate the rejected one", api.Event_VALIDATE_CONTAINER_ADJUSTMENT, podNew, ctr(podNew, "reject", true)),
		container("validate one out of scope", api.Event_VALIDATE_CONTAINER_ADJUSTMENT, podNew, ctr(podNew, "reject", false)),
		container("post-create the container in scope", api.Event_POST_CREATE_CONTAINER, podNew, created),
		container("start it, its annotation gone", api.Event_START_CONTAINER, podNew, createdChanged),
		container("start the one out of scope, annotated since", api.Event_START_CONTAINER, podNew, skippedChanged),
		container("post-start it", api.Event_POST_START_CONTAINER, podNew, createdChanged),
		container("update a synchronized container in scope, its annotation gone", api.Event_UPDATE_CONTAINER, podIn,
			&api.Container{Id: syncedIn.Id, Name: syncedIn.Name, PodSandboxId: podIn.Id}),
		container("post-update it", api.Event_POST_UPDATE_CONTAINER, podIn, syncedIn),
		container("stop a synchronized container out of scope, annotated since", api.Event_STOP_CONTAINER, podIn,
			&api.Container{Id: syncedOut.Id, Name: syncedOut.Name, PodSandboxId: podIn.Id, Annotations: on}),
		container("stop the container in scope", api.Event_STOP_CONTAINER, podNew, createdChanged),
		{"StateChange: start a synchronized container", api.Event_START_CONTAINER, func(ctx context.Context, svc api.PluginService) (proto.Message, error) {
			return svc.StateChange(ctx, &api.StateChangeEvent{Event: api.Event_START_CONTAINER, Pod: podIn, Container: syncedIn})
		}},
		container("remove the container in scope", api.Event_REMOVE_CONTAINER, podNew, createdChanged),
		container("update it after its removal", api.Event_UPDATE_CONTAINER, podNew, created),
		pod("update a pod in scope", api.Event_UPDATE_POD_SANDBOX, podNew),
		pod("post-update a pod out of scope", api.Event_POST_UPDATE_POD_SANDBOX, podNewOut),
		pod("stop the pod in scope", api.Event_STOP_POD_SANDBOX, podNew),
		pod("remove the pod out of scope", api.Event_REMOVE_POD_SANDBOX, podNewOut),
		pod("remove the pod in scope", api.Event_REMOVE_POD_SANDBOX, podNew),
		container("create a last container, in scope", api.Event_CREATE_CONTAINER, podIn, ctr(podIn, "last", true)),
		{"Shutdown", 0, func(ctx context.Context, svc api.PluginService) (proto.Message, error) {
			return svc.Shutdown(ctx, &api.Empty{})
		}},
	}
}

// TestProcessAndWASMAnswerAlike plays equivplugin's plugin as a stub
// process (over a real connection to stubtest's runtime) and as a WASM
// guest (loaded by internal/wasmhost, as nrikit's runtime loads it),
// both with the same options, through the same requests, and compares
// every answer: Configure, each part of Synchronize, then a sequence of
// events in and out of the plugin's scope, on runtimes that do and do not
// evaluate scopes, with and without a configuration.
func TestProcessAndWASMAnswerAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WASM guest")
	}
	if c, err := wasmhost.NewCache(""); errors.Is(err, wasmhost.ErrDisabled) {
		t.Skip("built without WASM support (nri_no_wasm)")
	} else if err == nil {
		_ = c.Close(context.Background())
	}
	module := equivGuest.Module(t)
	cache, err := wasmhost.NewCache(equivGuest.CacheDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close(context.Background()) })

	for _, tc := range []struct {
		name string
		opts []stubtest.Option
		// gated: the runtime does not evaluate scopes, the plugin's side
		// does.
		gated bool
	}{
		{"upstream runtime, no configuration", []stubtest.Option{stubtest.WithOrder(stubtest.UpstreamOrder)}, true},
		{"upstream runtime, configuration", []stubtest.Option{stubtest.WithOrder(stubtest.UpstreamOrder), stubtest.WithConfig("from the runtime")}, true},
		{"upstream runtime, narrowing configuration", []stubtest.Option{stubtest.WithOrder(stubtest.UpstreamOrder), stubtest.WithConfig(equivplugin.NarrowConfig)}, true},
		{"old runtime", []stubtest.Option{stubtest.WithNRIVersion(""), stubtest.WithRuntime("containerd", "v1.7.30")}, true},
		{"nrikit runtime", []stubtest.Option{stubtest.WithSupportedEvents(api.AllEvents), stubtest.WithConfig("from the runtime")}, false},
		{"nrikit runtime telling capabilities", []stubtest.Option{stubtest.WithSupportedEvents(api.AllEvents), stubtest.WithCapabilities(toldCaps)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]stubtest.Option{
				stubtest.WithState(statePods, stateCtrs), stubtest.WithSyncChunkSize(syncChunks),
				stubtest.WithTimeouts(time.Minute, time.Minute),
			}, tc.opts...)
			rt := stubtest.NewRuntime(t, opts...)
			st, proc := rt.StartPlugin(t, &equivplugin.Plugin{}, stub.WithDeclarations(equivplugin.Declared))
			checkCapabilities(t, st, proc)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p, err := wasmhost.Load(ctx, module, wasmhost.Options{Name: "10-test", Cache: cache, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Close(context.Background()) }()
			guest := wasmhost.NewClient(p)

			// Configure, with the request the runtime sent the process.
			crsp, err := guest.Configure(ctx, proc.ConfigureRequest())
			sameAnswer(t, "Configure", processAnswer(proc.ConfigureResponse(), nil), wasmAnswer(t, crsp, err))
			events := api.EventMask(proc.ConfigureResponse().GetEvents())
			if tc.gated && events&api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER) != api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER) {
				t.Errorf("subscription %s lacks the events that track containers in scope", events)
			}

			// Synchronize, in the parts the runtime sent.
			parts := splitSync(statePods, stateCtrs, syncChunks)
			procParts := proc.SynchronizeResponses()
			if len(procParts) != len(parts) {
				t.Fatalf("the runtime synchronized the process in %d parts, want %d", len(procParts), len(parts))
			}
			for i, req := range parts {
				rsp, err := guest.Synchronize(ctx, req)
				sameAnswer(t, fmt.Sprintf("Synchronize part %d", i+1), processAnswer(procParts[i], nil), wasmAnswer(t, rsp, err))
			}

			// The events, those the plugin subscribed to.
			answers := map[string]answer{}
			for _, c := range sequence() {
				if c.event != 0 && !events.IsSet(c.event) {
					continue
				}
				prsp, perr := c.send(ctx, proc.Client())
				grsp, gerr := c.send(ctx, guest)
				answers[c.name] = processAnswer(prsp, perr)
				sameAnswer(t, c.name, answers[c.name], wasmAnswer(t, grsp, gerr))
			}
			checkScenario(t, answers, tc.gated)
		})
	}
}

// toldCaps are the capabilities the runtime tells in the test case that
// tells some: those the plugin requires, and more.
var toldCaps = capability.NewSet(append([]capability.Capability{capability.Devices, capability.UpdateCPU, capability.Evict},
	equivplugin.RequiredCapabilities...)...)

// checkCapabilities checks what the process stub was told and what it
// sent: the guest, answering the same Configure request, must then note
// the same (its notes are in the answers compared).
func checkCapabilities(t *testing.T, st *stub.Stub, proc *stubtest.Plugin) {
	t.Helper()
	required := capability.NewSet(equivplugin.RequiredCapabilities...).Names()
	if got := proc.ConfigureResponse().GetRequiredCapabilities(); !slices.Equal(got, required) {
		t.Errorf("required capabilities sent: %q, want %q", got, required)
	}
	telling := proc.ConfigureRequest().GetCapabilities() != nil
	caps, told := st.Capabilities()
	if told != telling || (telling && caps != toldCaps) || (!telling && !caps.Empty()) {
		t.Errorf("the stub was told %v (%v); the runtime told %v", caps, told, proc.ConfigureRequest().GetCapabilities())
	}
}

// checkScenario checks that the answers (the same on both sides) show
// what the sequence is there to test: with a gate, a container out of
// scope at its creation is opted out of and stays out when annotated
// later, one in scope stays in when its annotation goes; without one,
// the handlers see everything.
func checkScenario(t *testing.T, answers map[string]answer, gated bool) {
	t.Helper()
	if len(answers) < 10 {
		t.Fatalf("only %d events sent: the scenario tests little", len(answers))
	}
	create := answers["create a container out of scope"].rsp.(*api.CreateContainerResponse)
	if gated != (len(create.GetOptOut().GetContainerIds()) == 1) {
		t.Errorf("a container out of scope was answered %v (gated: %v)", create, gated)
	}
	if a, ok := answers["update a synchronized container in scope, its annotation gone"]; ok && len(a.rsp.(*api.UpdateContainerResponse).GetUpdate()) == 0 {
		t.Errorf("a container in scope when synchronized was not updated after its annotation went: %v", a.rsp)
	}
	stop, ok := answers["stop the container in scope"]
	if !ok {
		return
	}
	updates := stop.rsp.(*api.StopContainerResponse).GetUpdate()
	if len(updates) != 1 {
		t.Fatalf("the container in scope at its creation was not stopped after its annotation went: %v", stop.rsp)
	}
	notes := updates[0].GetContainerId()
	if !strings.Contains(notes, "StartContainer(created)") || gated == strings.Contains(notes, "StartContainer(skipped)") {
		t.Errorf("after the starts (gated: %v), the plugin noted %q", gated, notes)
	}
}

// splitSync splits a snapshot as stubtest's runtime does: parts of chunk
// objects, pods first, every part but the last with more set.
func splitSync(pods []*api.PodSandbox, ctrs []*api.Container, chunk int) []*api.SynchronizeRequest {
	var parts []*api.SynchronizeRequest
	for {
		req := &api.SynchronizeRequest{}
		n := min(chunk, len(pods))
		req.Pods, pods = pods[:n], pods[n:]
		m := min(chunk-n, len(ctrs))
		req.Containers, ctrs = ctrs[:m], ctrs[m:]
		req.More = len(pods)+len(ctrs) > 0
		parts = append(parts, req)
		if !req.More {
			return parts
		}
	}
}
