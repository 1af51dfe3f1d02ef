package adaptation

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/nriconn"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The tests of this file check the bounds that keep one plugin's faults
// from stalling the runtime (issue 13), with plugins built on the stub
// running in the test process over in-memory connections. The chaos
// suite (tests/chaos) checks the same bounds with plugin processes.

// slowSync is a stub plugin whose Synchronize waits until release is
// closed, and which records the containers it is asked to create and
// adds ENV_<name>=1 to them.
type slowSync struct {
	name    string
	release chan struct{}

	mu      sync.Mutex
	created []string
}

func (p *slowSync) Synchronize(ctx context.Context, _ []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, nil
}

func (p *slowSync) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	p.created = append(p.created, ctr.GetId())
	p.mu.Unlock()
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("ENV_"+p.name, "1")
	return adj, nil, nil
}

func (p *slowSync) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.created)
}

// connectInProcess starts a stub plugin serving plugin on one end of an
// in-memory connection and hands the other end to the Adaptation. It
// returns the result of ServeConn on a channel.
func connectInProcess(t *testing.T, a *Adaptation, plugin any, opts ...stub.Option) <-chan error {
	t.Helper()
	rtEnd, plEnd := unixPair(t)
	st, err := stub.New(plugin, append([]stub.Option{stub.WithConnection(plEnd)}, opts...)...)
	must(t, err)
	served := make(chan error, 1)
	go func() { served <- a.ServeConn(context.Background(), rtEnd) }()
	started := make(chan error, 1)
	go func() { started <- st.Start(context.Background()) }()
	t.Cleanup(func() {
		st.Stop()
		<-started
	})
	return served
}

// waitState waits until the plugin full is in state want.
func waitState(t *testing.T, a *Adaptation, full string, want PluginState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range a.Plugins() {
			if p.FullName() == full && p.State == want {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("plugin %s never reached state %s: %+v", full, want, a.Plugins())
}

func newContainmentRuntime(t *testing.T, opts ...Option) (*Adaptation, *runtimetest.Store) {
	t.Helper()
	st := runtimetest.NewStore()
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", st.List, st.Update,
		append([]Option{WithPluginDir(""), WithDisabledExternalConnections(), WithLogger(logs.logger())}, opts...)...)
	must(t, err)
	must(t, a.Start(ctxT(t)))
	stopAtCleanup(t, a, logs)
	return a, st
}

// TestSynchronizeWait checks that a CreateContainer does not wait for a
// synchronizing plugin longer than the synchronize wait, and what then
// happens according to the plugin's failure policy.
func TestSynchronizeWait(t *testing.T) {
	const wait = 200 * time.Millisecond
	for _, tc := range []struct {
		name     string
		opts     []Option
		stubOpts []stub.Option
		// want is the error of CreateContainer: nil, or a check of it.
		want func(error) bool
	}{
		{name: "proceeds", want: nil},
		{
			name:     "fail_request",
			stubOpts: []stub.Option{stub.WithFailurePolicy(&api.FailurePolicy{FailRequest: true})},
			want: func(err error) bool {
				var perr *PluginError
				return errors.As(err, &perr) && perr.Kind == FailureSynchronizing && perr.Plugin == "10-slow"
			},
		},
		{
			name: "required",
			opts: []Option{WithPluginOverride("10-slow", PluginPolicy{Required: true})},
			want: func(err error) bool {
				var rerr *RequiredPluginError
				return errors.As(err, &rerr) && rerr.Plugin == "10-slow"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, st := newContainmentRuntime(t, append([]Option{WithSynchronizeWait(wait), WithRequestTimeout(5 * time.Second)}, tc.opts...)...)
			st.AddPod(testPod(0))
			slow := &slowSync{name: "slow", release: make(chan struct{})}
			served := connectInProcess(t, a, slow, append([]stub.Option{stub.WithPluginName("slow"), stub.WithPluginIdx("10")}, tc.stubOpts...)...)
			waitState(t, a, "10-slow", StateSynchronizing)

			start := time.Now()
			rsp, err := a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
			took := time.Since(start)
			if took > wait+time.Second {
				t.Errorf("CreateContainer took %v with a synchronize wait of %v", took, wait)
			}
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("CreateContainer: %v", err)
			case tc.want == nil && slices.Contains(envOf(rsp.GetAdjust()), "ENV_slow=1"):
				t.Errorf("the synchronizing plugin's adjustment was used: %v", envOf(rsp.GetAdjust()))
			case tc.want != nil && !tc.want(err):
				t.Fatalf("CreateContainer error = %v", err)
			}

			// Once synchronized, the plugin still learns of the
			// container (its answer is not used), and stays.
			close(slow.release)
			if err := <-served; err != nil {
				t.Fatalf("ServeConn: %v", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for !slices.Contains(slow.seen(), "ctr1") && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if !slices.Contains(slow.seen(), "ctr1") {
				t.Errorf("plugin never got the CreateContainer of ctr1: %v", slow.seen())
			}
			waitState(t, a, "10-slow", StateActive)
			rsp, err = a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 2)})
			if err != nil || !slices.Contains(envOf(rsp.GetAdjust()), "ENV_slow=1") {
				t.Errorf("after synchronizing: %v, %v", envOf(rsp.GetAdjust()), err)
			}
		})
	}
}

// TestSynchronizeBudget checks that a plugin that does not finish
// Synchronize within the budget is disconnected in about that time,
// whatever the per-part timeout.
func TestSynchronizeBudget(t *testing.T) {
	const budget = 300 * time.Millisecond
	a, _ := newContainmentRuntime(t, WithSynchronizeBudget(budget), WithSynchronizeTimeout(time.Minute))
	slow := &slowSync{name: "stuck", release: make(chan struct{})}
	defer close(slow.release)
	start := time.Now()
	served := connectInProcess(t, a, slow, stub.WithPluginName("stuck"), stub.WithPluginIdx("10"))
	var err error
	select {
	case err = <-served:
	case <-time.After(10 * budget):
		t.Fatalf("ServeConn still running after %v", 10*budget)
	}
	var perr *PluginError
	if !errors.As(err, &perr) || perr.Kind != FailureTimeout || perr.Timeout != budget {
		t.Fatalf("ServeConn = %v, want a timeout of the budget", err)
	}
	if took := time.Since(start); took > 2*budget+time.Second {
		t.Errorf("disconnected after %v, budget %v", took, budget)
	}
	if len(a.Plugins()) != 0 {
		t.Errorf("plugins left: %+v", a.Plugins())
	}
}

// bigAnswer is a builtin plugin answering CreateContainer with an
// environment variable of size bytes.
type bigAnswer struct {
	unimplementedPlugin
	size int
	// validator makes the plugin a validator that accepts every
	// adjustment with a reason of size bytes, instead.
	validator bool
}

func (p *bigAnswer) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	if p.validator {
		return &api.ConfigureResponse{Events: int32(api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT))}, nil
	}
	return &api.ConfigureResponse{Events: int32(api.MaskOf(api.Event_CREATE_CONTAINER))}, nil
}

func (p *bigAnswer) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{Reason: strings.Repeat("x", p.size)}, nil
}

func (p *bigAnswer) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{More: req.More}, nil
}

func (p *bigAnswer) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func (p *bigAnswer) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("BIG", strings.Repeat("x", p.size))
	return &api.CreateContainerResponse{Adjust: adj}, nil
}

// TestAnswerTooLarge checks that an answer above the limit is blamed on
// the plugin that gave it and handled by its failure policy, and that
// the plugins after it are not affected.
func TestAnswerTooLarge(t *testing.T) {
	const limit = 64 << 10
	for _, failRequest := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "fail_request"}[failRequest], func(t *testing.T) {
			opts := []Option{
				WithMaxAnswerSize(limit),
				WithBuiltinPlugin("10", "big", &bigAnswer{size: 2 * limit}),
				WithBuiltinPlugin("20", "small", &inproc{}),
			}
			if failRequest {
				opts = append(opts, WithPluginOverride("10-big", PluginPolicy{FailurePolicy: &api.FailurePolicy{FailRequest: true}}))
			}
			a, _ := newContainmentRuntime(t, opts...)
			rsp, err := a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
			if failRequest {
				var perr *PluginError
				var serr *AnswerSizeError
				if !errors.As(err, &perr) || perr.Plugin != "10-big" || perr.Kind != FailureOversize ||
					!errors.As(err, &serr) || serr.Limit != limit || serr.Merged {
					t.Fatalf("CreateContainer error = %v, want the oversize answer of 10-big", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CreateContainer: %v", err)
			}
			if env := envOf(rsp.GetAdjust()); !slices.Equal(env, []string{"INPROC=1"}) {
				t.Errorf("env = %.80q, want only the small plugin's", env)
			}
			if got := len(a.Plugins()); got != 2 {
				t.Errorf("%d plugins, want both still registered", got)
			}
		})
	}
}

// TestValidatorAnswerTooLarge checks that a validator's answer passes the
// same check as every other answer before it is used: one above the
// limit is the validator's failure, which fails the creation (validation
// fails closed), even from a builtin validator that accepts.
func TestValidatorAnswerTooLarge(t *testing.T) {
	const limit = 64 << 10
	a, _ := newContainmentRuntime(t, WithMaxAnswerSize(limit),
		WithBuiltinPlugin("10", "small", &inproc{}), WithBuiltinPlugin("90", "verdict", &bigAnswer{size: 2 * limit, validator: true}))
	_, err := a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
	var perr *PluginError
	var serr *AnswerSizeError
	if !errors.As(err, &perr) || perr.Plugin != "90-verdict" || perr.Kind != FailureOversize ||
		!errors.As(err, &serr) || serr.Limit != limit {
		t.Fatalf("CreateContainer error = %v, want the oversize answer of 90-verdict", err)
	}
}

// TestMergedRequestTooLarge checks that when the merged adjustment makes
// the request to the next plugin too large to send, the error names the
// plugin whose answer made it so, not the next one.
func TestMergedRequestTooLarge(t *testing.T) {
	// A 1 MiB answer under -race on a busy machine took over the default
	// 2 s once: the bound here is the size, not the time.
	a, _ := newContainmentRuntime(t, WithMaxAnswerSize(MaxMessageSize), WithRequestTimeout(scaled(20*time.Second)))
	pusher := &sizedAdjuster{size: MaxMessageSize - 8<<10}
	connected := connectInProcess(t, a, pusher, stub.WithPluginName("pusher"), stub.WithPluginIdx("10"))
	must(t, <-connected)
	innocent := &slowSync{name: "innocent", release: make(chan struct{})}
	close(innocent.release)
	connected = connectInProcess(t, a, innocent, stub.WithPluginName("innocent"), stub.WithPluginIdx("20"))
	must(t, <-connected)

	_, err := a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
	var perr *PluginError
	var serr *AnswerSizeError
	if !errors.As(err, &perr) || perr.Plugin != "10-pusher" || perr.Kind != FailureOversize ||
		!errors.As(err, &serr) || !serr.Merged {
		t.Fatalf("CreateContainer error = %v, want the merged request blamed on 10-pusher", err)
	}
	if len(innocent.seen()) != 0 {
		t.Errorf("the next plugin was called: %v", innocent.seen())
	}
}

// sizedAdjuster is a stub plugin adding one environment variable of size
// bytes to every container.
type sizedAdjuster struct{ size int }

func (p *sizedAdjuster) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("PUSHED", strings.Repeat("y", p.size))
	return adj, nil, nil
}

// TestNameTooLong checks that a plugin name above the limit is refused
// with a short message that says why, and that a RegisterPlugin too
// large for a plugin that has not registered closes the connection, with
// the reason in the runtime's log.
func TestNameTooLong(t *testing.T) {
	a, _ := newContainmentRuntime(t)
	register := func(name string) (plugin, runtime error) {
		rtEnd, plEnd := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- a.ServeConn(context.Background(), rtEnd) }()
		err := registerRaw(t, plEnd, "10", name)
		return err, <-served
	}
	perr, rerr := register(strings.Repeat("n", 32<<10))
	if status.Code(perr) != codes.InvalidArgument || !strings.Contains(perr.Error(), "the limit is 128") || len(perr.Error()) > 1024 {
		t.Fatalf("RegisterPlugin error (%d bytes) = %.300v", len(perr.Error()), perr)
	}
	var regErr *RegistrationError
	if !errors.As(rerr, &regErr) || len(regErr.Plugin) > 256 {
		t.Fatalf("ServeConn = %.300v", rerr)
	}

	perr, rerr = register(strings.Repeat("n", 1<<20))
	// Refused on the frame (the mux's read limit) or on the message.
	if perr == nil || rerr == nil || !(strings.Contains(rerr.Error(), "before it was configured (limit 65536)") ||
		strings.Contains(rerr.Error(), "exceeds maximum 65546")) {
		t.Fatalf("a 1 MiB RegisterPlugin: plugin got %.200v, runtime %.300v", perr, rerr)
	}
}

// TestMetricsOfGonePlugins checks that a plugin's metric series are
// deleted once it is gone, and kept while a replacement of the same name
// is there.
func TestMetricsOfGonePlugins(t *testing.T) {
	reg := newCountingRecorder()
	a, st := newContainmentRuntime(t, WithMetricsRecorder(reg))
	st.AddPod(testPod(0))
	series := reg.series
	waitSeries := func(plugin string, want func(int) bool, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !want(series(plugin)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d series of %s", what, series(plugin), plugin)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	first := &slowSync{name: "m", release: make(chan struct{})}
	close(first.release)
	// Unix sockets: the replacement has the same identity (this process).
	rtEnd, plEnd := unixPair(t)
	st1, err := stub.New(first, stub.WithConnection(plEnd), stub.WithPluginName("m"), stub.WithPluginIdx("10"))
	must(t, err)
	served := make(chan error, 1)
	go func() { served <- a.ServeConn(context.Background(), rtEnd) }()
	must(t, st1.Start(ctxT(t)))
	must(t, <-served)
	_, err = a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
	must(t, err)
	if series("10-m") == 0 {
		t.Fatal("no series for a registered plugin")
	}

	// A replacement of the same name keeps the series.
	second := &slowSync{name: "m", release: make(chan struct{})}
	close(second.release)
	must(t, <-connectInProcess(t, a, second, stub.WithPluginName("m"), stub.WithPluginIdx("10")))
	st1.Stop()
	time.Sleep(100 * time.Millisecond)
	waitSeries("10-m", func(n int) bool { return n > 0 }, "replacement registered")

	// Gone for good: the series go.
	for _, p := range a.Plugins() {
		if p.FullName() == "10-m" {
			a.mu.Lock()
			q := a.findLocked("10-m")
			a.mu.Unlock()
			q.disconnect("test")
		}
	}
	waitSeries("10-m", func(n int) bool { return n == 0 }, "plugin gone")
}

// registerRaw sends RegisterPlugin as idx-name on conn, speaking the
// protocol directly (the stub refuses invalid names itself), and returns
// the runtime's answer.
func registerRaw(t *testing.T, conn net.Conn, idx, name string) error {
	t.Helper()
	lay, err := nriconn.New(conn, nriconn.PluginRole, nil)
	must(t, err)
	defer lay.Mux.Close()
	client := ttrpc.NewClient(lay.ClientConn)
	defer client.Close()
	_, err = api.NewRuntimeClient(client).RegisterPlugin(ctxT(t), &api.RegisterPluginRequest{PluginName: name, PluginIdx: idx})
	return err
}
