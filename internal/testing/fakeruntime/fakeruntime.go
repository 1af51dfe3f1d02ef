// Package fakeruntime is a hand-written NRI runtime for the conformance
// checker's tests. It is written directly on the mux package and ttrpc,
// not with the adaptation package, so that it can behave as another
// runtime does (containerd, with upstream's NRI library) or as no runtime
// should.
package fakeruntime

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
)

// Behavior says how the fake runtime treats each plugin connection. It
// always answers RegisterPlugin at once, before Configure, as upstream's
// runtime does.
type Behavior struct {
	// RuntimeName, RuntimeVersion and NRIVersion are sent in Configure.
	RuntimeName, RuntimeVersion, NRIVersion string
	// RegistrationTimeout and RequestTimeout are sent in Configure, in
	// milliseconds.
	RegistrationTimeout, RequestTimeout int64
	// CheckName refuses an invalid plugin name or index with upstream's
	// errors: a plain error, which reaches the plugin as code Unknown,
	// and the connection left open.
	CheckName bool
	// CloseOnUnknownEvents closes the connection, without a reason, when
	// the answer to Configure subscribes to event bits no NRI version
	// defines (upstream logs "invalid plugin events: 0x...").
	CloseOnUnknownEvents bool
	// Synchronize sends Pods in one Synchronize request after Configure.
	Synchronize bool
	// Pods are the pods Synchronize carries.
	Pods []*api.PodSandbox
}

// Containerd behaves as containerd v2.4.2 does with its NRI library
// (containerd/nri v0.12.3): RegisterPlugin answered at once (an invalid
// name with code Unknown), then Configure, then, for a subscription with
// unknown event bits, the connection closed without a reason; otherwise
// Synchronize.
var Containerd = Behavior{
	RuntimeName:          "containerd",
	RuntimeVersion:       "v2.4.2",
	NRIVersion:           "v0.12.3",
	RegistrationTimeout:  5000,
	RequestTimeout:       2000,
	CheckName:            true,
	CloseOnUnknownEvents: true,
	Synchronize:          true,
	Pods:                 []*api.PodSandbox{{Id: "pod0", Name: "pause", Namespace: "default", Uid: "uid0"}},
}

// Sloppy accepts every registration, configures the plugin with a zero
// request timeout and never synchronizes it.
var Sloppy = Behavior{RuntimeName: "sloppy", RegistrationTimeout: 5000}

// runtime is one started fake runtime.
type runtime struct {
	b  Behavior
	l  net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	ms []*mux.Mux
}

// Start starts a fake runtime with behavior b listening on a new unix
// socket, and returns the socket's path. It stops when the test ends.
func Start(tb testing.TB, b Behavior) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "nrif") // short: unix socket paths are limited
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "nri.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	rt := &runtime{b: b, l: l}
	rt.wg.Add(1)
	go rt.accept(tb)
	tb.Cleanup(func() {
		l.Close()
		rt.mu.Lock()
		for _, m := range rt.ms {
			m.Close()
		}
		rt.mu.Unlock()
		rt.wg.Wait()
		os.RemoveAll(dir)
	})
	return path
}

func (rt *runtime) accept(tb testing.TB) {
	defer rt.wg.Done()
	for {
		conn, err := rt.l.Accept()
		if err != nil {
			return
		}
		if err := rt.serve(conn); err != nil {
			tb.Errorf("fake runtime: %v", err)
			return
		}
	}
}

// serve sets up a plugin connection and serves its Runtime service.
func (rt *runtime) serve(conn net.Conn) error {
	m, err := mux.New(conn)
	if err != nil {
		conn.Close()
		return fmt.Errorf("mux: %w", err)
	}
	rt.mu.Lock()
	rt.ms = append(rt.ms, m)
	rt.mu.Unlock()
	pc, err := m.Open(mux.PluginServiceConn)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	l, err := m.Listen(mux.RuntimeServiceConn)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	client := ttrpc.NewClient(pc)
	api.RegisterRuntimeService(srv, &service{rt: rt, m: m, plugin: api.NewPluginClient(client)})
	rt.wg.Add(2)
	go func() {
		defer rt.wg.Done()
		_ = srv.Serve(context.Background(), l)
	}()
	go func() {
		defer rt.wg.Done()
		<-m.Done()
		srv.Close()
		client.Close()
	}()
	return nil
}

// service is the Runtime service of one connection.
type service struct {
	rt     *runtime
	m      *mux.Mux
	plugin api.PluginService
}

// RegisterPlugin answers at once, then configures and synchronizes the
// plugin in the background, as upstream's runtime does.
func (s *service) RegisterPlugin(_ context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	b := s.rt.b
	if b.CheckName {
		if err := api.CheckPluginName(req.GetPluginName()); err != nil {
			return nil, fmt.Errorf("invalid plugin name: %w", err)
		}
		if err := api.CheckPluginIndex(req.GetPluginIdx()); err != nil {
			return nil, fmt.Errorf("invalid plugin index: %w", err)
		}
	}
	s.rt.wg.Add(1)
	go func() {
		defer s.rt.wg.Done()
		s.configure()
	}()
	return &api.Empty{}, nil
}

// configure sends Configure, refuses the plugin by closing the connection
// if it must, and synchronizes it.
func (s *service) configure() {
	b := s.rt.b
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.rt.wg.Add(1)
	go func() {
		defer s.rt.wg.Done()
		select {
		case <-s.m.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	rsp, err := s.plugin.Configure(ctx, &api.ConfigureRequest{
		RuntimeName:         b.RuntimeName,
		RuntimeVersion:      b.RuntimeVersion,
		NRIVersion:          b.NRIVersion,
		RegistrationTimeout: b.RegistrationTimeout,
		RequestTimeout:      b.RequestTimeout,
	})
	if err != nil {
		s.m.Close() // as upstream does with a plugin that fails Configure
		return
	}
	if b.CloseOnUnknownEvents && api.EventMask(rsp.GetEvents()).Unknown() != 0 {
		s.m.Close()
		return
	}
	if b.Synchronize {
		_, _ = s.plugin.Synchronize(ctx, &api.SynchronizeRequest{Pods: b.Pods})
	}
}

// UpdateContainers is not supported.
func (s *service) UpdateContainers(context.Context, *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return nil, fmt.Errorf("not supported")
}
