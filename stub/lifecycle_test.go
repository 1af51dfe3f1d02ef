package stub_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// shutdowner records Shutdown.
type shutdowner struct {
	creator
	called atomic.Bool
}

func (s *shutdowner) Shutdown(context.Context) { s.called.Store(true) }

func TestShutdownStops(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	plugin := &shutdowner{}
	s, p := startStub(t, rt, plugin)
	if err := p.Shutdown(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); !errors.Is(err, stub.ErrShutdown) {
		t.Errorf("Wait after Shutdown = %v, want ErrShutdown", err)
	}
	if !plugin.called.Load() {
		t.Error("Shutdown handler not called")
	}
}

func TestRunReturnsConnectionLost(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	reasons := make(chan error, 1)
	s, p := newStub(t, rt, &creator{}, stub.WithOnClose(func(err error) { reasons <- err }))
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(testContext(t)) }()
	if err := p.WaitRegistered(testContext(t)); err != nil {
		t.Fatal(err)
	}
	p.Close()
	var err error
	select {
	case err = <-runErr:
	case <-time.After(testTimeout):
		t.Fatal("Run does not return after the connection dropped")
	}
	if !errors.Is(err, stub.ErrConnectionLost) || !strings.HasPrefix(err.Error(), "stub: connection to runtime lost: ") {
		t.Errorf("Run = %q, want a lost connection", err)
	}
	select {
	case reason := <-reasons:
		if !errors.Is(reason, stub.ErrConnectionLost) {
			t.Errorf("OnClose got %v", reason)
		}
	case <-time.After(testTimeout):
		t.Error("OnClose not called")
	}
}

func TestRunContextDone(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	s, p := newStub(t, rt, &creator{})
	ctx, cancel := context.WithCancel(testContext(t))
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	if err := p.WaitRegistered(testContext(t)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	select {
	case <-p.Done():
	case <-time.After(testTimeout):
		t.Error("connection still open after Run returned")
	}
}

func TestReconnect(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithState([]*api.PodSandbox{pod("before")}, nil))
	var (
		dials    atomic.Int32
		failures = make(chan struct{}, 16)
	)
	dial := func(path string) (net.Conn, error) {
		dials.Add(1)
		c, err := rt.Dial(path)
		if err != nil {
			failures <- struct{}{}
		}
		return c, err
	}
	reasons := make(chan error, 4)
	plugin := &syncer{synced: make(chan struct{}, 4)}
	s, err := stub.New(plugin, stub.WithPluginIdx("10"), stub.WithPluginName("re"),
		stub.WithDialer(dial), stub.WithReconnect(5*time.Millisecond, 20*time.Millisecond),
		stub.WithOnClose(func(err error) { reasons <- err }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	p1, err := rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-plugin.synced

	// The runtime goes away and is unavailable for two dial attempts.
	rt.SetAvailable(false)
	rt.SetState([]*api.PodSandbox{pod("after1"), pod("after2")}, []*api.Container{ctr("c", "after1")})
	p1.Close()
	if reason := <-reasons; !errors.Is(reason, stub.ErrConnectionLost) {
		t.Errorf("OnClose got %v", reason)
	}
	<-failures
	<-failures
	if _, err := s.UpdateContainers(ctx, nil, nil); !errors.Is(err, stub.ErrNotConnected) {
		t.Errorf("UpdateContainers while reconnecting = %v", err)
	}
	rt.SetAvailable(true)

	p2, err := rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	<-plugin.synced
	plugin.mu.Lock()
	got := fmt.Sprint(plugin.calls)
	plugin.mu.Unlock()
	if want := "[[[before] []] [[after1 after2] [c]]]"; got != want {
		t.Errorf("Synchronize calls = %s, want %s", got, want)
	}
	if dials.Load() < 4 {
		t.Errorf("dialed %d times, want at least 4", dials.Load())
	}

	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	s.Stop()
	if err := <-done; err != nil {
		t.Errorf("Wait after Stop = %v, want nil", err)
	}
	// The stub may still have been completing the registration that the
	// runtime already considered done; then no registered connection
	// ended and OnClose is not called again.
	select {
	case reason := <-reasons:
		if !errors.Is(reason, stub.ErrClosed) {
			t.Errorf("OnClose after Stop got %v", reason)
		}
	default:
	}
}

func TestOnCloseAfterStop(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	reasons := make(chan error, 2)
	s, _ := startStub(t, rt, &creator{}, stub.WithOnClose(func(err error) { reasons <- err }))
	s.Stop()
	select {
	case reason := <-reasons:
		if !errors.Is(reason, stub.ErrClosed) {
			t.Errorf("OnClose after Stop got %v", reason)
		}
	default:
		t.Error("OnClose not called before Stop returned")
	}
}

func TestInheritedSocket(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	f, err := rt.ConnectFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The stub takes ownership of the descriptor it is given.
	fd, err := dup(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(api.PluginSocketEnvVar, strconv.Itoa(fd))
	t.Setenv(api.PluginNameEnvVar, "launched")
	t.Setenv(api.PluginIdxEnvVar, "05")

	// Options lose against the runtime's identity; WithReconnect has no
	// effect for a launched plugin.
	s, err := stub.New(&creator{}, stub.WithPluginIdx("99"), stub.WithPluginName("other"), stub.WithReconnect(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "05-launched" {
		t.Errorf("Name() = %q, want 05-launched", s.Name())
	}
	ctx := testContext(t)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Name() != "05-launched" {
		t.Errorf("runtime saw %q", p.Name())
	}
	p.Close()
	if err := s.Wait(); !errors.Is(err, stub.ErrConnectionLost) {
		t.Errorf("Wait = %v, want a lost connection (no reconnect for launched plugins)", err)
	}
}

func TestIdentityErrors(t *testing.T) {
	if _, err := stub.New(&creator{}, stub.WithPluginName("noindex")); err == nil || !strings.Contains(err.Error(), "no index") {
		t.Errorf("New without index = %v", err)
	}
	if _, err := stub.New(&creator{}, stub.WithPluginIdx("1")); err == nil {
		t.Error("New accepted a one-digit index")
	}
	if _, err := stub.New(struct{}{}, stub.WithPluginIdx("10")); err == nil {
		t.Error("New accepted a plugin without handlers")
	}
	if _, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithConnection(nopConn{}), stub.WithReconnect(time.Millisecond, time.Second)); err == nil {
		t.Error("New accepted WithReconnect with WithConnection")
	}
}

func TestDialFailure(t *testing.T) {
	s, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithSocketPath(t.TempDir()+"/missing.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "missing.sock") {
		t.Errorf("Start = %v, want a dial error naming the socket", err)
	}
}

func TestStopDuringRegistration(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithUnansweredRegistration())
	s, p := newStub(t, rt, &creator{})
	errC := make(chan error, 1)
	go func() { errC <- s.Start(testContext(t)) }()
	select {
	case <-p.Registering():
	case <-time.After(testTimeout):
		t.Fatal("RegisterPlugin never called")
	}
	s.Stop()
	if err := <-errC; !errors.Is(err, stub.ErrClosed) {
		t.Errorf("Start interrupted by Stop = %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil after Stop", err)
	}
}

// dup duplicates f's descriptor.
func dup(f *os.File) (int, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	var (
		fd   int
		derr error
	)
	if err := sc.Control(func(raw uintptr) { fd, derr = syscall.Dup(int(raw)) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// nopConn is a net.Conn that is never used.
type nopConn struct{ net.Conn }

// TestRuntimeClosingAtOnce: a runtime that closes the connection as soon
// as the plugin has it (as a runtime refusing a connection does) makes
// Start fail with an error wrapping ErrConnectionLost, whether the stub's
// multiplexer reads the close before or after it has opened its logical
// connections. The first order used to return the multiplexer's error
// alone; it is rare, so the test starts many plugins.
func TestRuntimeClosingAtOnce(t *testing.T) {
	for i := range 300 {
		plEnd, rtEnd := net.Pipe()
		rtEnd.Close() // the plugin's reads see EOF at once
		s, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithPluginName("closed"), stub.WithConnection(plEnd))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = s.Start(ctx)
		cancel()
		if !errors.Is(err, stub.ErrConnectionLost) {
			t.Fatalf("plugin %d: Start = %v, want an error wrapping ErrConnectionLost", i, err)
		}
	}
}
