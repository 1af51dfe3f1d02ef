package stubtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/socketpair"
	"github.com/nrikit/nrikit/stub"
)

// ErrUnavailable is returned by [Runtime.Dial] while the runtime is
// unavailable (see [Runtime.SetAvailable]).
var ErrUnavailable = errors.New("stubtest: runtime unavailable")

// Runtime is a fake NRI runtime. Its methods are safe for concurrent use.
type Runtime struct {
	cfg config
	wg  sync.WaitGroup // every goroutine of the runtime and its plugins

	mu        sync.Mutex
	pods      []*api.PodSandbox
	ctrs      []*api.Container
	plugins   []*Plugin
	queue     []*Plugin     // connections not yet returned by NextPlugin
	notify    chan struct{} // closed and replaced when queue grows
	down      bool
	closed    bool
	closeOnce sync.Once
}

// NewRuntime returns a runtime configured by opts; it fails the test if
// an option is invalid. The runtime is closed when the test ends.
func NewRuntime(t testing.TB, opts ...Option) *Runtime {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			t.Fatalf("stubtest.NewRuntime: %v", err)
		}
	}
	r := &Runtime{cfg: cfg, pods: cfg.pods, ctrs: cfg.ctrs, notify: make(chan struct{})}
	t.Cleanup(r.Close)
	return r
}

// SetState replaces the pods and containers that plugins connecting from
// now on are synchronized with.
func (r *Runtime) SetState(pods []*api.PodSandbox, ctrs []*api.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods, r.ctrs = pods, ctrs
}

func (r *Runtime) state() ([]*api.PodSandbox, []*api.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods, r.ctrs
}

// SetAvailable makes [Runtime.Dial] fail (false) or succeed (true, the
// default), to simulate a runtime that is restarting.
func (r *Runtime) SetAvailable(up bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = !up
}

// Connect returns the plugin's end of a new connection to the runtime,
// for [stub.WithConnection]. The runtime serves the other end.
func (r *Runtime) Connect() (net.Conn, error) {
	f, err := r.ConnectFile()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("stubtest: wrapping plugin end: %w", err)
	}
	return conn, nil
}

// ConnectFile is like [Runtime.Connect] but returns the plugin's end as a
// file, as a runtime passes it to a plugin it launches (NRI_PLUGIN_SOCKET).
// The caller owns the file.
func (r *Runtime) ConnectFile() (*os.File, error) {
	f, _, err := r.connect(true)
	return f, err
}

// connect makes a connection; queue says whether NextPlugin returns it.
func (r *Runtime) connect(queue bool) (*os.File, *Plugin, error) {
	pair, err := socketpair.New()
	if err != nil {
		return nil, nil, fmt.Errorf("stubtest: %w", err)
	}
	local, err := pair.LocalConn()
	if err != nil {
		pair.Close()
		return nil, nil, fmt.Errorf("stubtest: %w", err)
	}
	// Hand over a duplicate so that the pair can close its own copy.
	dup, err := dupFile(pair.PeerFile())
	pair.Close()
	if err != nil {
		local.Close()
		return nil, nil, err
	}
	p, err := r.serve(local, queue)
	if err != nil {
		dup.Close()
		return nil, nil, err
	}
	return dup, p, nil
}

// Dial is a dialer for [stub.WithDialer]: it ignores the path and connects
// to this runtime, unless the runtime is unavailable.
func (r *Runtime) Dial(string) (net.Conn, error) {
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	if down {
		return nil, ErrUnavailable
	}
	return r.Connect()
}

// serve starts the runtime side of a connection.
func (r *Runtime) serve(conn net.Conn, queue bool) (*Plugin, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		conn.Close()
		return nil, errors.New("stubtest: runtime closed")
	}
	p, err := newPlugin(r, conn)
	if err != nil {
		return nil, err
	}
	r.plugins = append(r.plugins, p)
	if queue {
		r.queue = append(r.queue, p)
		close(r.notify)
		r.notify = make(chan struct{})
	}
	return p, nil
}

// NextPlugin returns the runtime side of the next connection made with
// Connect, ConnectFile or Dial, in the order they were made.
func (r *Runtime) NextPlugin(ctx context.Context) (*Plugin, error) {
	for {
		r.mu.Lock()
		if len(r.queue) > 0 {
			p := r.queue[0]
			r.queue = r.queue[1:]
			r.mu.Unlock()
			return p, nil
		}
		notify := r.notify
		r.mu.Unlock()
		select {
		case <-notify:
		case <-ctx.Done():
			return nil, fmt.Errorf("stubtest: waiting for a plugin to connect: %w", ctx.Err())
		}
	}
}

// Plugins returns the runtime side of every connection so far.
func (r *Runtime) Plugins() []*Plugin {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Plugin(nil), r.plugins...)
}

// spawn runs fn in a goroutine that Close waits for, unless the runtime
// is closed; it reports whether fn was started.
func (r *Runtime) spawn(fn func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
	return true
}

// Close closes every connection and waits for the runtime's goroutines.
func (r *Runtime) Close() {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		plugins := append([]*Plugin(nil), r.plugins...)
		r.mu.Unlock()
		for _, p := range plugins {
			p.Close()
		}
		r.wg.Wait()
	})
}

// StartPlugin creates a stub for plugin connected to this runtime (as
// "10-test" unless opts name it otherwise), starts it and waits until the
// runtime has registered and synchronized it. It fails the test on error;
// the stub is stopped when the test ends.
func (r *Runtime) StartPlugin(t testing.TB, plugin any, opts ...stub.Option) (*stub.Stub, *Plugin) {
	t.Helper()
	f, p, err := r.connect(false)
	if err != nil {
		t.Fatalf("stubtest: %v", err)
	}
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatalf("stubtest: wrapping plugin end: %v", err)
	}
	all := append([]stub.Option{stub.WithPluginIdx("10"), stub.WithPluginName("test")}, opts...)
	all = append(all, stub.WithConnection(conn))
	s, err := stub.New(plugin, all...)
	if err != nil {
		conn.Close()
		t.Fatalf("stubtest: creating stub: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.regTimeout+r.cfg.reqTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("stubtest: starting plugin: %v", err)
	}
	t.Cleanup(s.Stop)
	if err := p.WaitRegistered(ctx); err != nil {
		t.Fatalf("stubtest: %v", err)
	}
	return s, p
}
