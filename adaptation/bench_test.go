package adaptation

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/pluginproc"
)

// benchRequest is the CreateContainerRequest of both benchmarks.
func benchRequest() *api.CreateContainerRequest {
	return &api.CreateContainerRequest{Pod: testPod(0), Container: bigCtr(0)}
}

// reportLatencies reports the median and 99th percentile of lat.
func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkCreateContainer measures CreateContainer through the
// Adaptation with N plugin processes, each adding one environment
// variable.
func BenchmarkCreateContainer(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("plugins=%d", n), func(b *testing.B) { benchCreateContainer(b, n) })
	}
}

// benchCreateContainer runs CreateContainer through a runtime with opts
// and n plugin processes, each adding one variable VARi, and reports its
// latencies.
func benchCreateContainer(b *testing.B, n int, opts ...Option) {
	var plugins []testPlugin
	for i := range n {
		plugins = append(plugins, testPlugin{fmt.Sprintf("%02d-env%d", 10+i, i),
			helperArgs("stub", "-quiet", "-events", "CreateContainer", "-env", fmt.Sprintf("VAR%d=%d", i, i))})
	}
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler)), WithDisabledExternalConnections()}, opts...)
	rt := newTestRuntime(b, plugins, opts...)
	rt.start(b)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rsp, err := rt.a.CreateContainer(ctx, benchRequest())
		lat = append(lat, time.Since(start))
		if err != nil || len(rsp.Adjust.GetEnv()) != n {
			b.Fatalf("CreateContainer: %v %v", rsp, err)
		}
	}
	b.StopTimer()
	reportLatencies(b, lat)
}

// BenchmarkRawTTRPC is the floor for BenchmarkCreateContainer: one ttrpc
// unary CreateContainer round trip over the NRI multiplexer to a child
// process, with the same request and answer.
func BenchmarkRawTTRPC(b *testing.B) {
	exe, err := os.Executable()
	must(b, err)
	proc, conn, err := pluginproc.Start(pluginproc.Spec{Path: exe,
		Args: helperArgs("raw", "-behave", "serve", "-quiet", "-env", "VAR0=0"),
		Env:  []string{helperEnv + "=1", noRaceExitDelay}, Output: os.Stderr})
	must(b, err)
	m, err := mux.New(conn)
	must(b, err)
	pc, err := m.Open(mux.PluginServiceConn)
	must(b, err)
	client := ttrpc.NewClient(pc)
	svc := api.NewPluginClient(client)
	defer func() {
		client.Close()
		m.Close()
		proc.Stop(hangGuard, time.Second)
	}()

	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rsp, err := svc.CreateContainer(ctx, benchRequest())
		lat = append(lat, time.Since(start))
		if err != nil || len(rsp.Adjust.GetEnv()) != 1 {
			b.Fatalf("CreateContainer: %v %v", rsp, err)
		}
	}
	b.StopTimer()
	reportLatencies(b, lat)
}

// BenchmarkScopedCreateContainer measures what scopes cost: CreateContainer
// of a GPU pod's container with 16 plugin processes of which only one
// has the pod in its scope, against the same call with only that plugin
// registered. The other 15 cost one filter evaluation each: no queue, no
// goroutine, no message.
func BenchmarkScopedCreateContainer(b *testing.B) {
	plugin := func(full, selector, env string) testPlugin {
		scope := scopeArg(b, &api.PluginScope{PodLabelSelector: selector})
		return testPlugin{full, helperArgs("stub", "-quiet", "-events", "CreateContainer", "-scope", scope, "-env", env)}
	}
	matching := plugin("10-gpu", "accel=gpu", "GPU=1")
	var others []testPlugin
	for i := range 15 {
		others = append(others, plugin(fmt.Sprintf("%02d-other%d", 20+i, i), fmt.Sprintf("accel=other%d", i), fmt.Sprintf("VAR%d=%d", i, i)))
	}
	for _, bc := range []struct {
		name    string
		plugins []testPlugin
	}{
		{"1-plugin", []testPlugin{matching}},
		{"16-plugins-1-matching", append([]testPlugin{matching}, others...)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rt := newTestRuntime(b, bc.plugins, WithLogger(slog.New(slog.DiscardHandler)), WithDisabledExternalConnections())
			rt.start(b)
			if n := len(rt.a.Plugins()); n != len(bc.plugins) {
				b.Fatalf("%d plugins registered, want %d", n, len(bc.plugins))
			}
			ctx := context.Background()
			req := benchRequest()
			req.Pod = gpuPod(0)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				rsp, err := rt.a.CreateContainer(ctx, req)
				lat = append(lat, time.Since(start))
				if err != nil || len(rsp.Adjust.GetEnv()) != 1 {
					b.Fatalf("CreateContainer: %v %v", rsp, err)
				}
			}
			b.StopTimer()
			reportLatencies(b, lat)
		})
	}
}

// BenchmarkNotifyFanout measures a notification (PostCreateContainer)
// relayed to N plugin processes concurrently: the request is encoded once
// for all of them.
func BenchmarkNotifyFanout(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("plugins=%d", n), func(b *testing.B) {
			var plugins []testPlugin
			for i := range n {
				plugins = append(plugins, testPlugin{fmt.Sprintf("%02d-post%d", 10+i, i),
					helperArgs("stub", "-quiet", "-events", "PostCreateContainer")})
			}
			rt := newTestRuntime(b, plugins, WithLogger(slog.New(slog.DiscardHandler)), WithDisabledExternalConnections())
			rt.start(b)
			ctx := context.Background()
			req := &api.PostCreateContainerRequest{Pod: testPod(0), Container: bigCtr(0)}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if err := rt.a.PostCreateContainer(ctx, req); err != nil {
					b.Fatalf("PostCreateContainer: %v", err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportLatencies(b, lat)
		})
	}
}
