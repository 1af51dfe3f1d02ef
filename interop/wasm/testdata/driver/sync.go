package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/wasm/internal/syncresult"
)

// node returns the pods and containers of a node with nPods pods and
// nCtrs containers, each container with the environment variables
// Kubernetes gives a container for each of services services of its
// namespace: with 110 pods (the kubelet's default maximum), 440
// containers and 15 services, about 2 MiB encoded; 4 MiB with 30
// services.
func node(nPods, nCtrs, services int) ([]*api.PodSandbox, []*api.Container) {
	pods, ctrs := fixture.SyncPods(nPods), fixture.SyncContainers(nPods, nCtrs)
	var env []string
	for i := range services {
		svc := fmt.Sprintf("BACKEND_SERVICE_%02d", i)
		addr := fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
		env = append(env,
			svc+"_SERVICE_HOST="+addr, svc+"_SERVICE_PORT=8080", svc+"_PORT=tcp://"+addr+":8080",
			svc+"_PORT_8080_TCP=tcp://"+addr+":8080", svc+"_PORT_8080_TCP_PROTO=tcp",
			svc+"_PORT_8080_TCP_PORT=8080", svc+"_PORT_8080_TCP_ADDR="+addr)
	}
	for _, c := range ctrs {
		c.Env = append(c.Env, env...)
	}
	return pods, ctrs
}

// syncNode starts nrikit's runtime with the module wasm as the plugin
// 10-guest, synchronizes it with node(n.pods, n.containers, n.services)
// and writes a syncresult.Result to out.
func syncNode(ctx context.Context, wasm, cache string, memory uint64, n nodeSize, out string) error {
	dir, err := os.MkdirTemp("", "driver-plugins-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	code, err := os.ReadFile(wasm)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "10-guest"), code, 0o644); err != nil {
		return err
	}
	confDir := filepath.Join(dir, "conf")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		return err
	}
	pods, ctrs := node(n.pods, n.containers, n.services)
	res := &syncresult.Result{Pods: len(pods), Containers: len(ctrs),
		Bytes: proto.Size(&api.SynchronizeRequest{Pods: pods, Containers: ctrs})}
	if res.Bytes <= 1<<20 {
		return fmt.Errorf("the node's snapshot is %d bytes, not over 1 MiB", res.Bytes)
	}
	rec := &syncRecorder{res: res}
	opts := []adaptation.Option{
		adaptation.WithPluginDir(dir), adaptation.WithConfigDir(confDir),
		adaptation.WithDisabledExternalConnections(), adaptation.WithWASMCacheDir(cache),
		adaptation.WithLogger(slog.New(rec.handler(slog.NewTextHandler(os.Stderr, nil)))),
		adaptation.WithMetricsRecorder(rec),
	}
	if memory > 0 {
		opts = append(opts, adaptation.WithWASMMemoryLimit(memory))
	}
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return pods, ctrs, nil }
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	a, err := adaptation.New("interop", "v0", list, update, opts...)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := a.Start(ctx); err != nil {
		return fmt.Errorf("nrikit Start: %w", err)
	}
	fmt.Fprintf(os.Stderr, "nrikit's runtime started in %v\n", time.Since(start).Round(time.Millisecond))
	for _, p := range a.Plugins() {
		if p.Index+"-"+p.Name == "10-guest" {
			res.State = p.State.String()
		}
	}
	if err := a.Stop(ctx); err != nil {
		return fmt.Errorf("nrikit Stop: %w", err)
	}
	rec.mu.Lock()
	b, err := json.MarshalIndent(res, "", "  ")
	rec.mu.Unlock()
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// nodeSize is the size of the node of mode sync.
type nodeSize struct{ pods, containers, services int }

// syncRecorder records, into res, the Synchronize requests the runtime
// tells its metrics of, and the log records of interest.
type syncRecorder struct {
	mu  sync.Mutex
	res *syncresult.Result
}

func (r *syncRecorder) RecordCall(context.Context, adaptation.Call) {}
func (r *syncRecorder) RecordPluginCount(int)                       {}
func (r *syncRecorder) RecordFailure(string, string)                {}
func (r *syncRecorder) ForgetPlugin(string)                         {}

func (r *syncRecorder) PluginSkips(string, api.EventMask) adaptation.SkipCounter { return nil }

func (r *syncRecorder) RecordRequest(plugin, request string, _ time.Duration, kind adaptation.FailureKind) {
	if plugin != "10-guest" || request != "Synchronize" {
		return
	}
	outcome := "ok"
	if kind != 0 {
		outcome = kind.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Requests = append(r.res.Requests, outcome)
}

// handler returns a slog.Handler that records into r and passes every
// record on to next.
func (r *syncRecorder) handler(next slog.Handler) slog.Handler {
	return &recordHandler{r: r, next: next}
}

type recordHandler struct {
	r     *syncRecorder
	next  slog.Handler
	attrs []slog.Attr
}

func (h *recordHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *recordHandler) Handle(ctx context.Context, rec slog.Record) error {
	var errText string
	find := func(a slog.Attr) bool {
		if a.Key == "error" {
			errText = a.Value.String()
		}
		return true
	}
	for _, a := range h.attrs {
		find(a)
	}
	rec.Attrs(find)
	h.r.mu.Lock()
	switch {
	case strings.HasPrefix(rec.Message, "synchronize:"):
		h.r.res.GuestSaw = append(h.r.res.GuestSaw, rec.Message)
	case rec.Level >= slog.LevelWarn:
		h.r.res.Warnings = append(h.r.res.Warnings, rec.Message+": "+errText)
	}
	h.r.mu.Unlock()
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordHandler{r: h.r, next: h.next.WithAttrs(as), attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *recordHandler) WithGroup(name string) slog.Handler {
	return &recordHandler{r: h.r, next: h.next.WithGroup(name), attrs: h.attrs}
}
