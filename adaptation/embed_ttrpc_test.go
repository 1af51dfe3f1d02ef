package adaptation

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
)

// TestTTRPCOptionsAndDeprecations: the runtime's ttrpc interceptors see
// every call to a connected plugin and every call of its (client and
// server side), and a plugin that falls back to StateChange is reported
// to the deprecation recorder once per event.
func TestTTRPCOptionsAndDeprecations(t *testing.T) {
	var (
		mu             sync.Mutex
		client, server []string
	)
	cli := ttrpc.WithUnaryClientInterceptor(func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, inv ttrpc.Invoker) error {
		mu.Lock()
		client = append(client, info.FullMethod)
		mu.Unlock()
		return inv(ctx, req, rsp)
	})
	srv := ttrpc.WithUnaryServerInterceptor(func(ctx context.Context, u ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, m ttrpc.Method) (any, error) {
		mu.Lock()
		server = append(server, info.FullMethod)
		mu.Unlock()
		return m(ctx, u)
	})
	rec := &recorded{}
	rt := newTestRuntime(t, []testPlugin{{"10-old", helperArgs("raw", "-behave", "legacy")}},
		WithTTRPCOptions([]ttrpc.ClientOpts{cli}, []ttrpc.ServerOpt{srv}), WithDeprecationRecorder(rec))
	rt.start(t)
	ctx := ctxT(t)
	for range 2 {
		must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(0)}))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range []string{"Configure", "Synchronize", "RunPodSandbox", "StateChange"} {
		if !slices.ContainsFunc(client, func(s string) bool { return strings.HasSuffix(s, "/"+m) }) {
			t.Errorf("client interceptor did not see %s: %q", m, client)
		}
	}
	if !slices.ContainsFunc(server, func(s string) bool { return strings.HasSuffix(s, "/RegisterPlugin") }) {
		t.Errorf("server interceptor did not see RegisterPlugin: %q", server)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := "deprecated StateChange 10-old does not implement a dedicated RunPodSandbox RPC call"; len(rec.warns) != 1 || rec.warns[0] != want {
		t.Errorf("deprecations %q, want [%q]", rec.warns, want)
	}
}
