package adaptation

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/otelttrpc"
	"github.com/containerd/ttrpc"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
)

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

	a, _ := newContainmentRuntime(t, WithTTRPCOptions(
		[]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(otelttrpc.UnaryClientInterceptor(tracing...))},
		[]ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(otelttrpc.UnaryServerInterceptor(tracing...))}))
	plugin := &tracedPlugin{}
	connectInProcess(t, a, plugin, stub.WithPluginIdx("10"), stub.WithPluginName("traced"),
		stub.WithTTRPCOptions(
			[]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(otelttrpc.UnaryClientInterceptor(tracing...))},
			[]ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(otelttrpc.UnaryServerInterceptor(tracing...))}))
	waitState(t, a, "10-traced", StateActive)

	ctx, span := tp.Tracer("runtime").Start(ctxT(t), "CRI CreateContainer")
	_, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	span.End()
	must(t, err)

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
