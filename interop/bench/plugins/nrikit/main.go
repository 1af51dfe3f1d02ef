// Command nrikit is the benchmark plugin built on nrikit's stub: it adds
// one environment variable in CreateContainer and ignores
// PostStartContainer and Synchronize (see package pluginconf for its
// configuration). A plugin with a namespace asks the runtime for that
// scope (stub.WithScope) and relies on the runtime to filter.
//
// With -floor SOCKET it is instead the floor of the benchmarks: a bare
// ttrpc server of the Plugin service on a unix socket, answering
// CreateContainer with the same one-variable adjustment.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/interop/bench/internal/pluginconf"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"github.com/nrikit/nrikit/stub"
)

type plugin struct{ cfg pluginconf.Config }

func (p *plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv(p.cfg.EnvKey, p.cfg.EnvValue)
	return adj, nil, nil
}

func (p *plugin) PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}

func (p *plugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	// The snapshot is decoded: the peak of the Synchronize rows.
	return nil, workload.RecordPeak(p.cfg.PeakFile)
}

func main() {
	floor := flag.String("floor", "", "serve the bare ttrpc floor on this unix socket")
	useMux := flag.Bool("mux", false, "with -floor: serve over the NRI multiplexer")
	flag.Parse()
	var err error
	if *floor != "" {
		err = serveFloor(*floor, *useMux)
	} else {
		err = runPlugin()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nrikit bench plugin:", err)
		os.Exit(1)
	}
}

func runPlugin() error {
	// One P, as every sample plugin does (see stub.TuneProcess); the
	// figures in docs/benchmarks.md were measured so. Not for the floor: it is
	// bare ttrpc as a Go program runs it by default.
	stub.TuneProcess()
	cfg, err := pluginconf.Load()
	if err != nil {
		return err
	}
	events := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_POST_START_CONTAINER)
	if cfg.Lifecycle {
		events = lifecycleEvents
	}
	opts := []stub.Option{
		stub.WithSubscription(events),
		stub.WithSyncGCPercent(stub.DefaultSyncGCPercent), // as the sample plugins
	}
	if cfg.Namespace != "" {
		opts = append(opts, stub.WithScope(&api.PluginScope{Namespaces: []string{cfg.Namespace}}))
	}
	st, err := stub.New(&plugin{cfg: cfg}, opts...)
	if err != nil {
		return err
	}
	stopProfile, err := startProfile()
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := st.Run(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// floorService answers CreateContainer like the plugin, without a stub.
type floorService struct {
	api.PluginService // nil: only CreateContainer is called
	p                 plugin
}

func (f *floorService) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	adj, upd, err := f.p.CreateContainer(ctx, req.GetPod(), req.GetContainer())
	return &api.CreateContainerResponse{Adjust: adj, Update: upd}, err
}

// serveFloor serves one connection on path until it closes.
func serveFloor(path string, useMux bool) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	conn, err := l.Accept()
	l.Close()
	if err != nil {
		return err
	}
	var cl net.Listener = &oneConn{c: conn, done: make(chan struct{})}
	if useMux {
		m, err := mux.New(conn)
		if err != nil {
			return err
		}
		defer m.Close()
		if cl, err = m.Listen(mux.PluginServiceConn); err != nil {
			return err
		}
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		return err
	}
	api.RegisterPluginService(srv, &floorService{p: plugin{cfg: pluginconf.Config{EnvKey: "BENCH_0", EnvValue: "0"}}})
	err = srv.Serve(context.Background(), cl)
	if err == ttrpc.ErrServerClosed {
		return nil
	}
	return nil // the client closing the connection ends the benchmark
}

// oneConn is a listener that yields one connection, then blocks until
// the connection is done.
type oneConn struct {
	c    net.Conn
	used bool
	done chan struct{}
}

func (o *oneConn) Accept() (net.Conn, error) {
	if !o.used {
		o.used = true
		return &closeNotify{Conn: o.c, done: o.done}, nil
	}
	<-o.done
	return nil, net.ErrClosed
}

func (o *oneConn) Close() error   { return nil }
func (o *oneConn) Addr() net.Addr { return o.c.LocalAddr() }

type closeNotify struct {
	net.Conn
	done chan struct{}
}

func (c *closeNotify) Close() error {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return c.Conn.Close()
}
