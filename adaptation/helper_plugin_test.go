package adaptation

// The plugin side of the tests: the test binary re-executed as a plugin
// (TestHelperProcess) in one of two modes. "stub" is a well-behaved plugin
// built with the stub package, configurable in what it subscribes to and
// adjusts; "raw" speaks the protocol directly with mux, ttrpc and api, so
// that it can misbehave exactly. Both report what they see as lines on
// stdout ("EVENT CreateContainer pod0 ctr0", "REGISTER ok", ...), which
// the runtime captures into its logger for launched plugins, and the tests
// read for external ones.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
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
	"google.golang.org/protobuf/proto"
)

// helperEnv marks a re-executed test binary as a plugin.
const helperEnv = "NRIKIT_ADAPTATION_TEST_PLUGIN"

// helperArgs returns the command-line arguments that run the test binary
// as a plugin in mode with args.
func helperArgs(mode string, args ...string) []string { return runtimetest.HelperArgs(mode, args...) }

// TestHelperProcess is not a test: it is the plugin process.
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{"stub": runStubPlugin, "raw": runRawPlugin}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("helper process for the other tests")
	}
}

// say prints one report line.
func say(format string, args ...any) { runtimetest.Say(format, args...) }

// pluginFlags are the flags both modes share.
type pluginFlags struct {
	name, idx, socket string
	hang, crash, fail string // event names
	delay             time.Duration
	delayOn           string
	syncDelay         time.Duration
	flood             int
	spam              int
	quiet             bool
	env               string
	wait              string
}

func (f *pluginFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "name", "", "plugin name (external plugins)")
	fs.StringVar(&f.idx, "idx", "", "plugin index (external plugins)")
	fs.StringVar(&f.socket, "socket", "", "runtime socket (external plugins)")
	fs.StringVar(&f.hang, "hang", "", "event whose handler never returns")
	fs.StringVar(&f.crash, "crash", "", "event whose handler exits the process")
	fs.StringVar(&f.fail, "fail", "", "event whose handler returns an error")
	fs.DurationVar(&f.delay, "delay", 0, "delay in the handler of -delay-on")
	fs.StringVar(&f.delayOn, "delay-on", "", "event names (comma-separated) delayed by -delay")
	fs.DurationVar(&f.syncDelay, "sync-delay", 0, "delay before answering the last Synchronize part")
	fs.IntVar(&f.flood, "flood", 0, "unsolicited UpdateContainers calls to send after registering")
	fs.IntVar(&f.spam, "spam", 0, "lines to print on stdout after registering, then a 1 MiB one, then exit")
	fs.BoolVar(&f.quiet, "quiet", false, "do not report events (benchmarks)")
	fs.StringVar(&f.env, "env", "", "KEY=VALUE to add to created containers")
	fs.StringVar(&f.wait, "wait", "", "file to wait for before connecting")
}

// awaitFile waits until the file of -wait exists (a minute at most).
func (f *pluginFlags) awaitFile() error {
	for deadline := time.Now().Add(time.Minute); f.wait != ""; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(f.wait); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("-wait %s: not there after a minute", f.wait)
		}
	}
	return nil
}

// adjustment is the CreateContainer answer for -env.
func (f *pluginFlags) adjustment() *api.ContainerAdjustment {
	adj := &api.ContainerAdjustment{}
	if k, v, ok := strings.Cut(f.env, "="); ok {
		adj.Env = append(adj.Env, &api.KeyValue{Key: k, Value: v})
	}
	return adj
}

// react applies the hang/crash/fail/delay behaviour for event.
func (f *pluginFlags) react(ctx context.Context, event string) error {
	if f.delay > 0 && f.delayOn != "" && strings.Contains(","+f.delayOn+",", ","+event+",") {
		time.Sleep(f.delay)
	}
	switch event {
	case f.hang:
		say("HANG %s", event)
		select {}
	case f.crash:
		say("CRASH %s", event)
		os.Exit(3)
	case f.fail:
		return fmt.Errorf("%s refused by test plugin", event)
	}
	return nil
}

// recorder is the stub-mode plugin: it reports every event and adjusts
// containers as told.
type recorder struct {
	pluginFlags
	annotate, reject string
	syncUpdate       string
	st               *stub.Stub
	// Scope and opt-out behaviour (scope_test.go).
	scope                  string // PluginScope as JSON
	optOutPods, optOutCtrs bool
	syncOptOut             string // IDs to opt out of in Synchronize ("pod..." are pods)
	createUpdate           string // container to update in the CreateContainer answer
	unsolicited            string // "update:ID,evict:ID" sent at PostStartContainer
}

func runStubPlugin(args []string) error {
	fs := flag.NewFlagSet("stub", flag.ContinueOnError)
	r := &recorder{}
	r.register(fs)
	events := fs.String("events", "", "subscription (default: all but validation)")
	timeout := fs.Duration("timeout", 0, "request timeout to ask for")
	failRequest := fs.Bool("fail-request", false, "failure policy fail_request")
	keep := fs.Bool("keep-connected", false, "failure policy keep_connected")
	fs.StringVar(&r.annotate, "annotate", "", "KEY=VALUE annotation to add to created containers")
	fs.StringVar(&r.reject, "reject", "", "validate, rejecting with this reason")
	fs.StringVar(&r.syncUpdate, "sync-update", "", "container to update in the Synchronize answer")
	fs.StringVar(&r.scope, "scope", "", "scope to declare, as JSON")
	fs.BoolVar(&r.optOutPods, "opt-out-pods", false, "opt out of every pod in RunPodSandbox")
	fs.BoolVar(&r.optOutCtrs, "opt-out-containers", false, "opt out of every container in CreateContainer (still adjusting it)")
	fs.StringVar(&r.syncOptOut, "sync-opt-out", "", "comma-separated IDs to opt out of in Synchronize")
	fs.StringVar(&r.createUpdate, "create-update", "", "container to update in the CreateContainer answer")
	fs.StringVar(&r.unsolicited, "unsolicited", "", "update:ID,evict:ID to request at PostStartContainer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mask := api.AllEvents.Clear(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	if r.reject != "" {
		mask = mask.Set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	}
	if *events != "" {
		var err error
		if mask, err = api.ParseEventMask(*events); err != nil {
			return err
		}
	}
	opts := []stub.Option{stub.WithSubscription(mask)}
	if r.name != "" {
		opts = append(opts, stub.WithPluginName(r.name), stub.WithPluginIdx(r.idx))
	}
	if r.socket != "" {
		opts = append(opts, stub.WithSocketPath(r.socket))
	}
	if *timeout > 0 {
		opts = append(opts, stub.WithRequestTimeout(*timeout))
	}
	if *failRequest || *keep {
		opts = append(opts, stub.WithFailurePolicy(&api.FailurePolicy{FailRequest: *failRequest, KeepConnected: *keep}))
	}
	if r.scope != "" {
		scope := &api.PluginScope{}
		if err := json.Unmarshal([]byte(r.scope), scope); err != nil {
			return fmt.Errorf("-scope: %w", err)
		}
		opts = append(opts, stub.WithScope(scope))
	}
	say("ENV %s=%s %s=%s %s=%s runtime=%s", api.PluginNameEnvVar, os.Getenv(api.PluginNameEnvVar),
		api.PluginIdxEnvVar, os.Getenv(api.PluginIdxEnvVar), api.PluginSocketEnvVar, os.Getenv(api.PluginSocketEnvVar),
		os.Getenv("NRIKIT_TEST_RUNTIME_ENV"))
	st, err := stub.New(r, opts...)
	if err != nil {
		return err
	}
	r.st = st
	ctx := context.Background()
	if err := r.awaitFile(); err != nil {
		return err
	}
	if err := st.Start(ctx); err != nil {
		say("REGISTER error %v", err)
		return err
	}
	say("REGISTER ok")
	if r.flood > 0 {
		go r.floodUpdates(ctx)
	}
	if r.spam > 0 {
		spam(r.spam)
		return nil
	}
	return st.Wait()
}

// spam prints n lines "SPAM i" and a 1 MiB line on stdout.
func spam(n int) {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	for i := range n {
		fmt.Fprintf(w, "SPAM %d\n", i)
	}
	fmt.Fprintf(w, "SPAM long %s\n", strings.Repeat("x", 1<<20))
	w.Flush()
}

func (r *recorder) floodUpdates(ctx context.Context) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed, errs := 0, 0
	for i := range r.flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := r.st.UpdateContainers(ctx, []*api.ContainerUpdate{{ContainerId: fmt.Sprintf("flood%d", i)}}, nil)
			mu.Lock()
			defer mu.Unlock()
			failed += len(f)
			if err != nil {
				errs++
			}
		}()
	}
	wg.Wait()
	say("FLOOD done failed=%d errors=%d", failed, errs)
}

func (r *recorder) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	say("CONFIG %q runtime=%s/%s", config, runtime, version)
	return 0, nil
}

func (r *recorder) synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, p := range pods {
		say("SEEN pod %s", p.Id)
	}
	for _, c := range ctrs {
		say("SEEN container %s", c.Id)
	}
	// The summary comes last: a test that waits for it has every SEEN line.
	say("SYNC pods=%d containers=%d", len(pods), len(ctrs))
	if r.syncDelay > 0 {
		time.Sleep(r.syncDelay)
	}
	if err := r.react(ctx, "Synchronize"); err != nil {
		return nil, err
	}
	if r.syncUpdate != "" {
		return []*api.ContainerUpdate{{ContainerId: r.syncUpdate}}, nil
	}
	return nil, nil
}

func (r *recorder) Shutdown(context.Context) { say("SHUTDOWN") }

func (r *recorder) pod(ctx context.Context, e api.Event, pod *api.PodSandbox) error {
	if r.quiet {
		return nil
	}
	say("EVENT %s %s -", e.Name(), pod.GetId())
	return r.react(ctx, e.Name())
}

func (r *recorder) ctr(ctx context.Context, e api.Event, pod *api.PodSandbox, ctr *api.Container) error {
	if r.quiet {
		return nil
	}
	say("EVENT %s %s %s env=%s", e.Name(), pod.GetId(), ctr.GetId(), strings.Join(ctr.GetEnv(), ","))
	if e == api.Event_CREATE_CONTAINER {
		say("PODDIGEST %s", podDigest(pod))
		say("CTRDIGEST %s", podDigest(ctr))
	}
	return r.react(ctx, e.Name())
}

func (r *recorder) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if err := r.pod(ctx, api.Event_RUN_POD_SANDBOX, pod); err != nil {
		return err
	}
	if r.optOutPods {
		return fmt.Errorf("pod %s: %w", pod.GetId(), stub.ErrNotInterestedInPod)
	}
	return nil
}

func (r *recorder) UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	return r.pod(ctx, api.Event_UPDATE_POD_SANDBOX, pod)
}

func (r *recorder) PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return r.pod(ctx, api.Event_POST_UPDATE_POD_SANDBOX, pod)
}

func (r *recorder) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return r.pod(ctx, api.Event_STOP_POD_SANDBOX, pod)
}

func (r *recorder) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return r.pod(ctx, api.Event_REMOVE_POD_SANDBOX, pod)
}

func (r *recorder) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if err := r.ctr(ctx, api.Event_CREATE_CONTAINER, pod, ctr); err != nil {
		return nil, nil, err
	}
	adj := r.adjustment()
	if k, v, ok := strings.Cut(r.annotate, "="); ok {
		adj.Annotations = map[string]string{k: v}
	}
	var updates []*api.ContainerUpdate
	if r.createUpdate != "" {
		updates = []*api.ContainerUpdate{{ContainerId: r.createUpdate}}
	}
	if r.optOutCtrs {
		return adj, updates, stub.ErrNotInterestedInContainer
	}
	return adj, updates, nil
}

func (r *recorder) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return r.ctr(ctx, api.Event_POST_CREATE_CONTAINER, pod, ctr)
}

func (r *recorder) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return r.ctr(ctx, api.Event_START_CONTAINER, pod, ctr)
}

func (r *recorder) PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if err := r.ctr(ctx, api.Event_POST_START_CONTAINER, pod, ctr); err != nil {
		return err
	}
	if r.unsolicited != "" {
		r.sendUnsolicited(ctx)
	}
	return nil
}

func (r *recorder) UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, r.ctr(ctx, api.Event_UPDATE_CONTAINER, pod, ctr)
}

func (r *recorder) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return r.ctr(ctx, api.Event_POST_UPDATE_CONTAINER, pod, ctr)
}

func (r *recorder) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, r.ctr(ctx, api.Event_STOP_CONTAINER, pod, ctr)
}

func (r *recorder) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return r.ctr(ctx, api.Event_REMOVE_CONTAINER, pod, ctr)
}

func (r *recorder) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	var plugins []string
	for _, p := range req.GetPlugins() {
		plugins = append(plugins, p.GetIndex()+"-"+p.GetName())
	}
	say("VALIDATE %s pristine-env=%s adjusted-env=%d plugins=%s", req.GetContainer().GetId(),
		strings.Join(req.GetContainer().GetEnv(), ","), len(req.GetAdjust().GetEnv()), strings.Join(plugins, ","))
	if r.reject != "" {
		return fmt.Errorf("%s", r.reject)
	}
	return nil
}

// rawPlugin is the raw-mode plugin.
type rawPlugin struct {
	// UnimplementedPluginService answers an event added to the protocol
	// that rawPlugin has no method of its own for.
	api.UnimplementedPluginService
	pluginFlags
	behave      string
	events      int
	reqTimeout  time.Duration
	configError string
	requireCaps string
}

func runRawPlugin(args []string) error {
	fs := flag.NewFlagSet("raw", flag.ContinueOnError)
	r := &rawPlugin{}
	r.register(fs)
	fs.StringVar(&r.behave, "behave", "", "misbehaviour: never-register, register-twice, garbage, configure-hang, sync-exit, legacy; serve: only serve the plugin service")
	fs.IntVar(&r.events, "events", 0, "ConfigureResponse.events")
	fs.DurationVar(&r.reqTimeout, "timeout", 0, "ConfigureResponse.request_timeout")
	fs.StringVar(&r.configError, "configure-error", "", "fail Configure with this message")
	fs.StringVar(&r.requireCaps, "require-caps", "", "ConfigureResponse.required_capabilities, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if r.name == "" {
		r.name, r.idx = os.Getenv(api.PluginNameEnvVar), os.Getenv(api.PluginIdxEnvVar)
	}
	var (
		conn net.Conn
		err  error
	)
	if r.socket != "" {
		conn, err = net.Dial("unix", r.socket)
	} else {
		conn, err = socketpair.FileConn(3)
	}
	if err != nil {
		return err
	}
	if r.behave == "garbage" {
		_, err := conn.Write([]byte("\x00\x00\x00\x02\xff\xff\xff\xffthis is not a frame"))
		say("GARBAGE sent err=%v", err)
		buf := make([]byte, 1)
		_, err = conn.Read(buf)
		say("GARBAGE closed %v", err)
		return nil
	}
	m, err := mux.New(conn)
	if err != nil {
		return err
	}
	l, err := m.Listen(mux.PluginServiceConn)
	if err != nil {
		return err
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		return err
	}
	api.RegisterPluginService(srv, r)
	go srv.Serve(context.Background(), l)
	rc, err := m.Open(mux.RuntimeServiceConn)
	if err != nil {
		return err
	}
	client := ttrpc.NewClient(rc)
	rt := api.NewRuntimeClient(client)
	if r.behave == "serve" {
		<-m.Done()
		return nil
	}
	if r.behave == "never-register" {
		say("NOT REGISTERING")
		<-m.Done()
		say("CLOSED")
		return nil
	}
	req := &api.RegisterPluginRequest{PluginName: r.name, PluginIdx: r.idx, NRIVersion: "test"}
	r.registerOnce(rt, req)
	if r.behave == "register-twice" {
		r.registerOnce(rt, req)
	}
	<-m.Done()
	say("CLOSED")
	return nil
}

func (r *rawPlugin) registerOnce(rt api.RuntimeService, req *api.RegisterPluginRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rt.RegisterPlugin(ctx, req); err != nil {
		st, _ := status.FromError(err)
		say("REGISTER error code=%s msg=%s", st.Code(), st.Message())
		return
	}
	say("REGISTER ok")
}

func (r *rawPlugin) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	say("CONFIGURE supported=0x%x max=%d sync=%d", req.SupportedEvents, req.MaxRequestTimeout, req.SynchronizeTimeout)
	if r.behave == "configure-hang" {
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond)
		return nil, ctx.Err()
	}
	if r.configError != "" {
		return nil, fmt.Errorf("%s", r.configError)
	}
	rsp := &api.ConfigureResponse{Events: int32(r.events), RequestTimeout: r.reqTimeout.Milliseconds()}
	if r.requireCaps != "" {
		rsp.RequiredCapabilities = strings.Split(r.requireCaps, ",")
	}
	return rsp, nil
}

func (r *rawPlugin) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	say("SYNCPART pods=%d containers=%d more=%v size=%d", len(req.Pods), len(req.Containers), req.More, proto.Size(req))
	if r.behave == "sync-exit" {
		say("EXITING in Synchronize")
		os.Exit(4)
	}
	return &api.SynchronizeResponse{More: req.More}, nil
}

func (r *rawPlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	say("SHUTDOWN")
	return &api.Empty{}, nil
}

func (r *rawPlugin) legacyOnly(ctx context.Context, e api.Event, pod, ctr string) error {
	if r.behave == "legacy" {
		return status.Errorf(codes.Unimplemented, "method %s", e.Name())
	}
	say("EVENT %s %s %s", e.Name(), pod, ctr)
	return r.react(ctx, e.Name())
}

func (r *rawPlugin) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, r.legacyOnly(ctx, api.Event_RUN_POD_SANDBOX, req.GetPod().GetId(), "-")
}

func (r *rawPlugin) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return &api.UpdatePodSandboxResponse{}, r.react(ctx, "UpdatePodSandbox")
}

func (r *rawPlugin) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, r.legacyOnly(ctx, api.Event_POST_UPDATE_POD_SANDBOX, req.GetPod().GetId(), "-")
}

func (r *rawPlugin) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, r.legacyOnly(ctx, api.Event_STOP_POD_SANDBOX, req.GetPod().GetId(), "-")
}

func (r *rawPlugin) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, r.legacyOnly(ctx, api.Event_REMOVE_POD_SANDBOX, req.GetPod().GetId(), "-")
}

func (r *rawPlugin) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	if !r.quiet {
		say("EVENT CreateContainer %s %s", req.GetPod().GetId(), req.GetContainer().GetId())
	}
	return &api.CreateContainerResponse{Adjust: r.adjustment()}, r.react(ctx, "CreateContainer")
}

func (r *rawPlugin) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, r.legacyOnly(ctx, api.Event_POST_CREATE_CONTAINER, req.GetPod().GetId(), req.GetContainer().GetId())
}

func (r *rawPlugin) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, r.legacyOnly(ctx, api.Event_START_CONTAINER, req.GetPod().GetId(), req.GetContainer().GetId())
}

func (r *rawPlugin) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, r.legacyOnly(ctx, api.Event_POST_START_CONTAINER, req.GetPod().GetId(), req.GetContainer().GetId())
}

func (r *rawPlugin) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return &api.UpdateContainerResponse{}, r.react(ctx, "UpdateContainer")
}

func (r *rawPlugin) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, r.legacyOnly(ctx, api.Event_POST_UPDATE_CONTAINER, req.GetPod().GetId(), req.GetContainer().GetId())
}

func (r *rawPlugin) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return &api.StopContainerResponse{}, r.react(ctx, "StopContainer")
}

func (r *rawPlugin) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, r.legacyOnly(ctx, api.Event_REMOVE_CONTAINER, req.GetPod().GetId(), req.GetContainer().GetId())
}

func (r *rawPlugin) StateChange(_ context.Context, ev *api.StateChangeEvent) (*api.Empty, error) {
	ctr := "-"
	if ev.Container != nil {
		ctr = ev.Container.Id
	}
	say("STATECHANGE %s %s %s", ev.Event.Name(), ev.GetPod().GetId(), ctr)
	return &api.Empty{}, nil
}

func (r *rawPlugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

// podDigest identifies the whole of a pod or container as decoded (the
// runtime encodes the pod of a CreateContainer once and the container by
// hand).
func podDigest(m proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "error:" + err.Error()
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
