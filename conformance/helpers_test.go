package conformance

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/socketpair"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// helperEnv makes the re-executed test binary a plugin process.
const helperEnv = "CONFORMANCE_HELPER"

// helperSocketEnv gives an external helper plugin the socket to dial.
const helperSocketEnv = "CONFORMANCE_HELPER_SOCKET"

// helperCommand is the command line that runs the test binary as a plugin
// in mode; helperEnvVars is the environment it needs.
func helperCommand(mode string) []string {
	return append([]string{os.Args[0], "-test.count=1"}, runtimetest.HelperArgs(mode)...)
}

// helperEnvVars is the environment that makes the test binary a plugin
// process (see helperCommand).
func helperEnvVars() []string { return []string{helperEnv + "=1"} }

// rawModes are the modes of the hand-written plugin (rawPlugin).
var rawModes = []string{"never-registers", "wrong-name", "unknown-bits", "malformed", "conflicting",
	"crash-unsubscribed", "ignore-close", "invalid-scope", "scope-ignored", "legacy", "legacy-no-statechange"}

// legacyEvents are the events the legacy modes subscribe to: those that
// plugins of NRI v0.11 and earlier receive through StateChange, and one
// with an RPC of its own there.
var legacyEvents = api.StateChangeEvents.Set(api.Event_CREATE_CONTAINER)

// TestHelperProcess is not a test: it is the plugin process of the other
// tests, in the mode its arguments name (runtimetest.HelperMain).
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{
		"stub-good":     func([]string) error { return runStubPlugin(false) },
		"stub-external": func([]string) error { return runStubPlugin(true) },
		"stub-scoped": func([]string) error {
			return runStubPlugin(false, stub.WithScope(&api.PluginScope{PodLabelSelector: "team=a"}))
		},
	}
	for _, mode := range rawModes {
		modes[mode] = func([]string) error { return runRawPlugin(mode) }
	}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("helper process for the plugin tests")
	}
}

// goodPlugin is a well-behaved plugin built with the stub.
type goodPlugin struct{}

func (goodPlugin) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adjust := &api.ContainerAdjustment{
		Env:         []*api.KeyValue{{Key: "GOOD", Value: "yes"}, {Key: "-REMOVED"}},
		Annotations: map[string]string{"checked-by": "conformance"},
		Mounts:      []*api.Mount{{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid"}}},
	}
	return adjust, nil, nil
}

func (goodPlugin) StopContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func (goodPlugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) error {
	return nil
}

func runStubPlugin(external bool, opts ...stub.Option) error {
	if external {
		opts = append(opts, stub.WithSocketPath(os.Getenv(helperSocketEnv)), stub.WithPluginIdx("30"), stub.WithPluginName("external-good"))
	}
	s, err := stub.New(goodPlugin{}, opts...)
	if err != nil {
		return fmt.Errorf("creating the stub: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = s.Run(ctx)
	// Run ending because the runtime shut the plugin down or went away is
	// the normal end of a plugin.
	fmt.Fprintf(os.Stderr, "stub ended: %v\n", err)
	return nil
}

// rawPlugin is a hand-written plugin (mux + ttrpc) that misbehaves as its
// mode says.
type rawPlugin struct {
	mode   string
	events api.EventMask
}

func (p *rawPlugin) unsubscribed(ev api.Event) error {
	if p.mode == "crash-unsubscribed" {
		fmt.Fprintf(os.Stderr, "crashing on unsubscribed %s\n", ev.Name())
		os.Exit(3)
	}
	return status.Errorf(codes.Unimplemented, "%s not implemented", ev.Name())
}

func (p *rawPlugin) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	resp := &api.ConfigureResponse{Events: int32(p.events)}
	switch p.mode {
	case "invalid-scope":
		resp.Scope = &api.PluginScope{PodLabelSelector: "team in (a"}
	case "scope-ignored":
		// Declares a scope, but adjusts every container it is sent: on a
		// runtime that does not evaluate scopes, that is every one.
		resp.Scope = &api.PluginScope{PodLabelSelector: "team=a"}
	}
	return resp, nil
}

func (p *rawPlugin) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{More: req.GetMore()}, nil
}

func (p *rawPlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func (p *rawPlugin) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	resp := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{}}
	switch p.mode {
	case "malformed":
		resp.Adjust.Env = []*api.KeyValue{{Key: "", Value: "orphan"}}
		resp.Adjust.Mounts = []*api.Mount{{Source: "/src", Type: "bind"}}
		resp.Update = []*api.ContainerUpdate{{ContainerId: "no-such-container", Linux: &api.LinuxContainerUpdate{Resources: newWorld().containers[1].GetLinux().GetResources()}}}
	case "conflicting":
		resp.Adjust.Env = []*api.KeyValue{{Key: "MODE", Value: "a"}, {Key: "MODE", Value: "b"}}
	default:
		resp.Adjust.Env = []*api.KeyValue{{Key: "RAW", Value: "1"}}
	}
	return resp, nil
}

func (p *rawPlugin) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return nil, p.unsubscribed(api.Event_RUN_POD_SANDBOX)
}

func (p *rawPlugin) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return nil, p.unsubscribed(api.Event_UPDATE_POD_SANDBOX)
}

func (p *rawPlugin) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return nil, p.unsubscribed(api.Event_POST_UPDATE_POD_SANDBOX)
}

func (p *rawPlugin) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return nil, p.unsubscribed(api.Event_STOP_POD_SANDBOX)
}

func (p *rawPlugin) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return nil, p.unsubscribed(api.Event_REMOVE_POD_SANDBOX)
}

func (p *rawPlugin) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_POST_CREATE_CONTAINER)
}

func (p *rawPlugin) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_START_CONTAINER)
}

func (p *rawPlugin) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_POST_START_CONTAINER)
}

func (p *rawPlugin) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_UPDATE_CONTAINER)
}

func (p *rawPlugin) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_POST_UPDATE_CONTAINER)
}

func (p *rawPlugin) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_STOP_CONTAINER)
}

func (p *rawPlugin) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return nil, p.unsubscribed(api.Event_REMOVE_CONTAINER)
}

// StateChange serves the events of api.StateChangeEvents in mode legacy,
// as a plugin built on NRI v0.11 does (its other RPCs answer
// UNIMPLEMENTED), and refuses a StateChangeEvent without the pod, or the
// container of a container event.
func (p *rawPlugin) StateChange(_ context.Context, sc *api.StateChangeEvent) (*api.Empty, error) {
	if p.mode != "legacy" {
		return nil, status.Error(codes.Unimplemented, "StateChange not implemented")
	}
	ev := sc.GetEvent()
	switch {
	case !api.StateChangeEvents.IsSet(ev):
		return nil, status.Errorf(codes.InvalidArgument, "StateChange of %s, which has an RPC of its own", ev.Name())
	case sc.GetPod().GetId() == "":
		return nil, status.Errorf(codes.InvalidArgument, "StateChange of %s without its pod", ev.Name())
	case api.ContainerEvents.IsSet(ev) && sc.GetContainer().GetId() == "":
		return nil, status.Errorf(codes.InvalidArgument, "StateChange of %s without its container", ev.Name())
	}
	return &api.Empty{}, nil
}

func (p *rawPlugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return nil, p.unsubscribed(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
}

// hangGuard bounds how long a misbehaving helper lingers if nobody kills
// it.
const hangGuard = time.Minute

func runRawPlugin(mode string) error {
	p := &rawPlugin{mode: mode, events: api.MaskOf(api.Event_CREATE_CONTAINER)}
	switch mode {
	case "unknown-bits":
		p.events |= 1 << 20
	case "legacy", "legacy-no-statechange":
		p.events = legacyEvents
	}
	name, idx := os.Getenv(api.PluginNameEnvVar), os.Getenv(api.PluginIdxEnvVar)
	var conn net.Conn
	var err error
	if path := os.Getenv(helperSocketEnv); path != "" {
		// An external plugin: it dials the runtime's socket.
		name, idx = mode, "30"
		conn, err = net.Dial("unix", path)
	} else {
		conn, err = socketpair.FileConn(3)
	}
	if err != nil {
		return fmt.Errorf("connecting to the runtime: %w", err)
	}
	m, err := mux.New(conn)
	if err != nil {
		return fmt.Errorf("mux: %w", err)
	}
	l, err := m.Listen(mux.PluginServiceConn)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	api.RegisterPluginService(srv, p)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	go func() { _ = srv.Serve(ctx, l) }()
	rc, err := m.Open(mux.RuntimeServiceConn)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	rt := api.NewRuntimeClient(ttrpc.NewClient(rc))
	if mode != "never-registers" {
		if mode == "wrong-name" {
			name = "someone-else"
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := rt.RegisterPlugin(rctx, &api.RegisterPluginRequest{PluginName: name, PluginIdx: idx})
		rcancel()
		if err != nil {
			return fmt.Errorf("registration refused: %w", err)
		}
	}
	select {
	case <-m.Done():
	case <-ctx.Done():
	}
	if mode == "ignore-close" {
		// The misbehaviour under test: keep running after the socket closed.
		<-ctx.Done()
	}
	return nil
}
