// Command driver runs one CreateContainer request through a WASM plugin,
// for the interop/wasm tests, in a process of its own so that the tests
// run at the same speed with and without the race detector (compiling a
// module under the race detector takes minutes):
//
//	driver -mode host -wasm guest.wasm -cache DIR -req req.pb -out rsp.pb
//	driver -mode upstream -dir PLUGINDIR -req req.pb -out rsp.pb
//	driver -mode check -wasm guest.wasm -cache DIR -out report.json
//	driver -mode sync -wasm guest.wasm -cache DIR [-memory BYTES] [-pods N -containers N -services N] -out sync.json
//
// Mode host loads the module with nrikit's internal/wasmhost, configures
// it and runs the request; mode upstream starts upstream v0.12.5's
// runtime with the plugins of PLUGINDIR and runs the request through it;
// mode check runs `nri check plugin` (package conformance) on the module;
// mode sync starts nrikit's runtime (package adaptation) with the module
// as a WASM plugin of its plugin directory and a node of over 1 MiB of
// pods and containers, and writes what happened as JSON (a
// syncresult.Result).
// The request and the response are binary protobuf files; the log goes
// to stderr. It must be linked with
// -ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	uadapt "github.com/containerd/nri/pkg/adaptation"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/interop/internal/upstreamrt"
)

func main() {
	mode := flag.String("mode", "", "host, upstream, check or sync")
	wasm := flag.String("wasm", "", "module (mode host)")
	cache := flag.String("cache", "", "compilation cache directory (mode host)")
	dir := flag.String("dir", "", "plugin directory (mode upstream)")
	reqFile := flag.String("req", "", "CreateContainerRequest file")
	out := flag.String("out", "", "CreateContainerResponse file")
	memory := flag.Uint64("memory", 0, "the WASM plugin's memory limit in bytes, 0 for the runtime's default (mode sync)")
	var n nodeSize
	flag.IntVar(&n.pods, "pods", 110, "the node's pods (mode sync)")
	flag.IntVar(&n.containers, "containers", 440, "the node's containers (mode sync)")
	flag.IntVar(&n.services, "services", 15, "the services whose environment variables each container has (mode sync)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if *mode == "sync" {
		err = syncNode(ctx, *wasm, *cache, *memory, n, *out)
	} else {
		err = run(ctx, *mode, *wasm, *cache, *dir, *reqFile, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode, wasm, cache, dir, reqFile, out string) error {
	if mode == "check" {
		return check(ctx, wasm, cache, out)
	}
	b, err := os.ReadFile(reqFile)
	if err != nil {
		return err
	}
	req := &api.CreateContainerRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return err
	}
	var rsp *api.CreateContainerResponse
	switch mode {
	case "host":
		rsp, err = viaHost(ctx, wasm, cache, req)
	case "upstream":
		rsp, err = viaUpstream(ctx, dir, req)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		return err
	}
	if b, err = proto.Marshal(rsp); err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// check runs nrikit's plugin checker (`nri check plugin`) on the module
// wasm and writes its report, as JSON, to out, and as text to stderr.
func check(ctx context.Context, wasm, cache, out string) error {
	rep, err := conformance.CheckPlugin(ctx, conformance.PluginConfig{Command: []string{wasm}, WASMCacheDir: cache, Output: os.Stderr})
	if err != nil {
		return err
	}
	if err := rep.WriteText(os.Stderr); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// viaHost runs req through the module wasm loaded by nrikit's host.
func viaHost(ctx context.Context, wasm, cache string, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	start := time.Now()
	p, err := wasmhost.Load(ctx, wasm, wasmhost.Options{Name: "10-guest", CacheDir: cache,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return nil, err
	}
	defer p.Close(ctx)
	fmt.Fprintf(os.Stderr, "loaded %s in %v\n", wasm, time.Since(start).Round(time.Millisecond))
	call := func(fn string, req, rsp proto.Message) error {
		b, err := proto.Marshal(req)
		if err != nil {
			return err
		}
		out, err := p.Call(ctx, fn, b)
		if err != nil {
			return fmt.Errorf("%s: %w", fn, err)
		}
		return proto.Unmarshal(out, rsp)
	}
	crsp := &api.ConfigureResponse{}
	if err := call(wasmhost.FuncConfigure, &api.ConfigureRequest{RuntimeName: "interop", RuntimeVersion: "v0", NRIVersion: api.NRIVersion}, crsp); err != nil {
		return nil, err
	}
	if want := api.MaskOf(api.Event_CREATE_CONTAINER); api.EventMask(crsp.GetEvents()) != want {
		return nil, fmt.Errorf("the guest subscribed to %s, want %s", api.EventMask(crsp.GetEvents()), want)
	}
	rsp := &api.CreateContainerResponse{}
	if err := call(wasmhost.EventFunc(api.Event_CREATE_CONTAINER), req, rsp); err != nil {
		return nil, err
	}
	return rsp, nil
}

// viaUpstream runs req through upstream's runtime with the plugins of dir.
func viaUpstream(ctx context.Context, dir string, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	sync := func(context.Context, uadapt.SyncCB) error { return nil }
	update := func(context.Context, []*uadapt.ContainerUpdate) ([]*uadapt.ContainerUpdate, error) { return nil, nil }
	confDir, err := os.MkdirTemp("", "driver-conf-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(confDir)
	r, err := uadapt.New("containerd", "v2.2.1", sync, update,
		uadapt.WithPluginPath(dir), uadapt.WithPluginConfigPath(confDir), uadapt.WithDisabledExternalConnections())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := r.Start(); err != nil {
		return nil, fmt.Errorf("upstream Start: %w", err)
	}
	defer r.Stop()
	fmt.Fprintf(os.Stderr, "upstream's runtime started in %v (compiling the modules)\n", time.Since(start).Round(time.Millisecond))
	return upstreamrt.Events{Adaptation: r}.CreateContainer(ctx, req)
}
