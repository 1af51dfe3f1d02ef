package stubmetrics_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubmetrics"
	"github.com/nrikit/nrikit/stub/stubtest"
)

const testTimeout = 10 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func pod(id string) *api.PodSandbox {
	return &api.PodSandbox{Id: id, Name: "pod-" + id, Namespace: "default", Uid: "uid-" + id}
}

func ctr(id, podID string) *api.Container {
	return &api.Container{Id: id, PodSandboxId: podID, Name: "ctr-" + id}
}

// creator is a plugin that handles CreateContainer with fn, or adjusts
// nothing.
type creator struct {
	fn func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
}

func (c *creator) CreateContainer(ctx context.Context, p *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if c.fn == nil {
		return &api.ContainerAdjustment{}, nil, nil
	}
	return c.fn(ctx, p, ctr)
}

// newMetrics returns metrics served on a port of the loopback interface.
func newMetrics(t *testing.T) *stubmetrics.Metrics {
	t.Helper()
	m, err := stubmetrics.New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scrape gets path from a stub's metrics address and returns the status
// code and body. Keep-alives are off: no client goroutine outlives it.
func scrape(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testTimeout}
	rsp, err := client.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return rsp.StatusCode, string(body)
}

// awaitStatus polls path until it answers want, or fails the test.
func awaitStatus(t *testing.T, addr, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		code, _ := scrape(t, addr, path)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s answers %d, want %d", path, code, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitMetricsAddr waits until the stub's metrics are served.
func awaitMetricsAddr(t *testing.T, s *stubmetrics.Metrics) string {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for s.Addr() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the stub does not serve its metrics")
		}
		time.Sleep(time.Millisecond)
	}
	return s.Addr()
}

func TestMetricsAndHealthWhileReconnecting(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	m := newMetrics(t)
	gate := make(chan struct{})
	dial := func(path string) (net.Conn, error) {
		<-gate
		return rt.Dial(path)
	}
	s, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithPluginName("metrics"),
		stub.WithDialer(dial), stub.WithReconnect(5*time.Millisecond, 20*time.Millisecond),
		stub.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	if m.Registry() == nil {
		t.Fatal("no registry")
	}
	ctx := testContext(t)
	started := make(chan error, 1)
	go func() { started <- s.Start(ctx) }()
	defer s.Stop()

	// Connecting: alive, not ready.
	addr := awaitMetricsAddr(t, m)
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Errorf("serving on %s, want 127.0.0.1", addr)
	}
	if code, _ := scrape(t, addr, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before registration = %d, want 503", code)
	}
	if code, _ := scrape(t, addr, "/livez"); code != http.StatusOK {
		t.Errorf("/livez while connecting = %d, want 200", code)
	}
	close(gate)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if code, _ := scrape(t, addr, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once registered = %d, want 200", code)
	}

	p1, err := rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p1.CreateContainer(ctx, pod("p"), ctr("c", "p")); err != nil {
		t.Fatal(err)
	}
	_, body := scrape(t, addr, "/metrics")
	for _, want := range []string{
		`nri_stub_handler_calls_total{handler="CreateContainer"} 1`,
		`nri_stub_handler_duration_seconds_count{handler="CreateContainer"} 1`,
		`nri_stub_connection_state{state="registered"} 1`,
		`nri_stub_connection_state{state="connecting"} 0`,
		`nri_stub_registrations_total 1`,
		`nri_stub_reconnects_total 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "nri_stub_handler_errors_total{") {
		t.Error("/metrics counts handler errors, but there were none")
	}

	// The runtime goes away: alive (reconnecting), not ready.
	rt.SetAvailable(false)
	p1.Close()
	awaitStatus(t, addr, "/readyz", http.StatusServiceUnavailable)
	if code, _ := scrape(t, addr, "/livez"); code != http.StatusOK {
		t.Errorf("/livez while reconnecting = %d, want 200", code)
	}

	// It comes back: ready again.
	rt.SetAvailable(true)
	if _, err := rt.NextPlugin(ctx); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, addr, "/readyz", http.StatusOK)
	_, body = scrape(t, addr, "/metrics")
	for _, want := range []string{`nri_stub_registrations_total 2`, `nri_stub_reconnects_total 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Stop stops serving.
	s.Stop()
	if got := m.Addr(); got != "" {
		t.Errorf("Addr after Stop = %q", got)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("the endpoints are still served after Stop")
	}
}

func TestHealthAfterGivingUp(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	failing := &creator{fn: func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
		return nil, nil, errors.New("no")
	}}
	m := newMetrics(t)
	s, p := rt.StartPlugin(t, failing, stub.WithObserver(m))
	addr := m.Addr()
	if addr == "" {
		t.Fatal("not serving after Start")
	}
	ctx := testContext(t)
	if _, err := p.CreateContainer(ctx, pod("p"), ctr("c", "p")); err == nil {
		t.Fatal("CreateContainer succeeded")
	}
	_, body := scrape(t, addr, "/metrics")
	if want := `nri_stub_handler_errors_total{handler="CreateContainer"} 1`; !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %q", want)
	}

	// Without WithReconnect, a lost connection ends the stub: the
	// endpoints say so until Stop.
	p.Close()
	if err := s.Wait(); !errors.Is(err, stub.ErrConnectionLost) {
		t.Fatalf("Wait = %v", err)
	}
	for path, want := range map[string]int{"/livez": 503, "/readyz": 503} {
		if code, _ := scrape(t, addr, path); code != want {
			t.Errorf("%s after giving up = %d, want %d", path, code, want)
		}
	}
	_, body = scrape(t, addr, "/metrics")
	if want := `nri_stub_connection_state{state="stopped"} 1`; !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %q", want)
	}
	s.Stop()
	if got := m.Addr(); got != "" {
		t.Errorf("Addr after Stop = %q", got)
	}
}

func TestMetricsAddrErrors(t *testing.T) {
	for _, addr := range []string{"", "localhost", "127.0.0.1:1:2"} {
		if _, err := stubmetrics.New(addr); err == nil {
			t.Errorf("New accepted %q", addr)
		}
	}
	if _, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithObserver(nil)); err == nil {
		t.Error("stub.New accepted a nil observer")
	}

	// A port in use makes Start fail, before it connects.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	rt := stubtest.NewRuntime(t)
	conn, err := rt.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, err := stubmetrics.New(busy.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithPluginName("x"),
		stub.WithConnection(conn), stub.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "serving metrics") {
		t.Errorf("Start on a busy port = %v", err)
	}
	if err := s.Wait(); err == nil {
		t.Error("Wait after the failed Start = nil")
	}
}
