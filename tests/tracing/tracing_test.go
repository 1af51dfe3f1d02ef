package tracing

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/otelttrpc"
	"github.com/containerd/ttrpc"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
)

// hangGuard bounds every wait: it only guards against hangs.
const hangGuard = 10 * time.Second

// tracedPlugin records the span context its CreateContainer handler's
// context carries.
type tracedPlugin struct {
	mu   sync.Mutex
	seen trace.SpanContext
}

func (p *tracedPlugin) CreateContainer(ctx context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	p.seen = trace.SpanContextFromContext(ctx)
	p.mu.Unlock()
	return nil, nil, nil
}

// TestTracing shows OpenTelemetry tracing through the runtime library and
// the stub the way containerd sets it up: otelttrpc's interceptors given to
// WithTTRPCOptions on the runtime side and to stub.WithTTRPCOptions on the
// plugin side. A runtime's CreateContainer span, the runtime library's
// client span of the plugin call and the plugin's server span belong to one
// trace, and the plugin's handler gets the server span in its context.
func TestTracing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	prop := propagation.TraceContext{}
	tracing := []otelttrpc.Option{otelttrpc.WithTracerProvider(tp), otelttrpc.WithPropagators(prop)}

	a := newRuntime(t, adaptation.WithTTRPCOptions(
		[]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(otelttrpc.UnaryClientInterceptor(tracing...))},
		[]ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(otelttrpc.UnaryServerInterceptor(tracing...))}))
	plugin := &tracedPlugin{}
	connectInProcess(t, a, plugin, stub.WithPluginIdx("10"), stub.WithPluginName("traced"),
		stub.WithTTRPCOptions(
			[]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(otelttrpc.UnaryClientInterceptor(tracing...))},
			[]ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(otelttrpc.UnaryServerInterceptor(tracing...))}))
	waitActive(t, a, "10-traced")

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	ctx, span := tp.Tracer("runtime").Start(ctx, "CRI CreateContainer")
	_, err := a.CreateContainer(ctx, &api.CreateContainerRequest{
		Pod:       &api.PodSandbox{Id: "pod0", Name: "pod-0", Namespace: "default", Uid: "uid-0"},
		Container: &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr-0"},
	})
	span.End()
	if err != nil {
		t.Fatal(err)
	}

	root := span.SpanContext()
	var client, server *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		s := &spans[i]
		if !strings.HasSuffix(s.Name, "/CreateContainer") {
			continue
		}
		switch s.SpanKind {
		case trace.SpanKindClient:
			client = s
		case trace.SpanKindServer:
			server = s
		}
	}
	if client == nil || server == nil {
		t.Fatalf("want a client and a server span of the plugin's CreateContainer, got %d spans: %+v", len(spans), spanNames(spans))
	}
	if client.SpanContext.TraceID() != root.TraceID() || client.Parent.SpanID() != root.SpanID() {
		t.Errorf("the runtime library's plugin call is not a child of the runtime's span")
	}
	if server.SpanContext.TraceID() != root.TraceID() || server.Parent.SpanID() != client.SpanContext.SpanID() {
		t.Errorf("the plugin's span is not a child of the runtime library's call")
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	if plugin.seen.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("the plugin's handler context carries span %s, want the server span %s", plugin.seen.SpanID(), server.SpanContext.SpanID())
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"("+s.SpanKind.String()+")")
	}
	return out
}

// newRuntime starts a runtime library with no plugin directory and no
// socket, stopped when the test ends.
func newRuntime(t *testing.T, opts ...adaptation.Option) *adaptation.Adaptation {
	t.Helper()
	st := runtimetest.NewStore()
	a, err := adaptation.New("test-runtime", "v1", st.List, st.Update,
		append([]adaptation.Option{adaptation.WithPluginDir(""), adaptation.WithDisabledExternalConnections()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		_ = a.Stop(ctx)
	})
	return a
}

// connectInProcess starts a stub serving plugin on one end of an
// in-memory connection and hands the other end to the runtime library.
func connectInProcess(t *testing.T, a *adaptation.Adaptation, plugin any, opts ...stub.Option) {
	t.Helper()
	rtEnd, plEnd := net.Pipe()
	st, err := stub.New(plugin, append([]stub.Option{stub.WithConnection(plEnd)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.ServeConn(context.Background(), rtEnd) }()
	started := make(chan error, 1)
	go func() { started <- st.Start(context.Background()) }()
	t.Cleanup(func() {
		st.Stop()
		<-started
		<-served
	})
}

// waitActive waits until the plugin full is active.
func waitActive(t *testing.T, a *adaptation.Adaptation, full string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, p := range a.Plugins() {
			if p.FullName() == full && p.State == adaptation.StateActive {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("plugin %s never became active: %+v", full, a.Plugins())
}
