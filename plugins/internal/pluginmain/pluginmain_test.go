package pluginmain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

func TestScopeFlags(t *testing.T) {
	def := &api.PluginScope{PodLabelSelector: "accel=gpu"}
	for name, tc := range map[string]struct {
		args []string
		want *api.PluginScope
	}{
		"default": {nil, def},
		"replaced": {[]string{"-namespace", "ml", "-namespace=kube-*", "-container", "c*", "-image", "reg/*", "-runtime-handler", "kata", "-cel", "true", "-pod-selector", "x=y"},
			&api.PluginScope{Namespaces: []string{"ml", "kube-*"}, ContainerNames: []string{"c*"}, Images: []string{"reg/*"},
				RuntimeHandlers: []string{"kata"}, Cel: "true", PodLabelSelector: "x=y"}},
		"all": {[]string{"-all"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			var sc scopeFlags
			sc.register(fs, def)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got := sc.scope()
			if (got == nil) != (tc.want == nil) || (got != nil && !proto.Equal(got, tc.want)) {
				t.Errorf("scope = %v, want %v", got, tc.want)
			}
		})
	}
}

func spec(built *bool) Spec {
	return Spec{Name: "test", Summary: "a test plugin", Setup: func(fs *flag.FlagSet) NewFunc {
		fs.String("own", "", "a plugin flag")
		return func(*slog.Logger) (any, []stub.Option, error) {
			*built = true
			return nil, nil, errors.New("not built")
		}
	}}
}

func TestMainUsage(t *testing.T) {
	var built bool
	var stderr bytes.Buffer
	err := Main(context.Background(), spec(&built), []string{"-help"}, &stderr)
	if !errors.Is(err, flag.ErrHelp) || ExitCode(err, &stderr) != 0 {
		t.Errorf("-help: %v", err)
	}
	for _, want := range []string{"test: a test plugin", "-own", "-pod-selector", "-idx", "-log-level", "-log-format", "-log-file", "-reconnect", "-metrics-addr"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, args := range [][]string{{"-nope"}, {"extra"}} {
		stderr.Reset()
		err := Main(context.Background(), spec(&built), args, &stderr)
		var usage *UsageError
		if !errors.As(err, &usage) || ExitCode(err, &stderr) != 2 || stderr.Len() == 0 {
			t.Errorf("%v: error %v, output %q", args, err, stderr.String())
		}
	}
	if built {
		t.Error("plugin built despite usage errors")
	}
	stderr.Reset()
	err = Main(context.Background(), spec(&built), []string{"-log-level", "loud"}, &stderr)
	if err == nil || !strings.Contains(err.Error(), `invalid log level "loud"`) {
		t.Errorf("bad level: %v", err)
	}
	err = Main(context.Background(), spec(&built), nil, &stderr)
	if !built || err == nil || !strings.Contains(err.Error(), "test: not built") || ExitCode(err, &stderr) != 1 {
		t.Errorf("build error: %v", err)
	}
}

// envPlugin adds one variable to every container.
type envPlugin struct{}

func (envPlugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("FROM_TEST", "1")
	return adj, nil, nil
}

// dialing is a spec whose plugin dials rt instead of a socket, as an
// external plugin does.
func dialing(rt *stubtest.Runtime) Spec {
	return Spec{Name: "test", Summary: "a test plugin", Setup: func(*flag.FlagSet) NewFunc {
		return func(*slog.Logger) (any, []stub.Option, error) {
			return envPlugin{}, []stub.Option{stub.WithDialer(rt.Dial)}, nil
		}
	}}
}

// runMain runs Main in the background; the result arrives on the channel.
func runMain(ctx context.Context, spec Spec, args ...string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Main(ctx, spec, args, io.Discard) }()
	return done
}

// registered waits for the plugin's next connection to rt and its
// registration.
func registered(t *testing.T, ctx context.Context, rt *stubtest.Runtime) *stubtest.Plugin {
	t.Helper()
	p, err := rt.NextPlugin(ctx)
	if err == nil {
		err = p.WaitRegistered(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("Main did not return")
		return nil
	}
}

// TestReconnect checks that a plugin started by hand reconnects by
// default when the runtime drops the connection (a runtime restart: the
// runtime is unreachable for a while), keeps working on the new
// connection, and ends with status 0 when the runtime shuts it down
// instead of reconnecting: runtimes send Shutdown to dismiss a plugin.
func TestReconnect(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	rt := stubtest.NewRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	done := runMain(ctx, dialing(rt), "-idx", "10", "-log-file", logFile)

	first := registered(t, ctx, rt)
	rt.SetAvailable(false)
	first.Close()
	// The runtime comes back after the plugin's first attempt failed.
	for b, _ := os.ReadFile(logFile); !bytes.Contains(b, []byte("reconnecting to runtime failed")); b, _ = os.ReadFile(logFile) {
		if ctx.Err() != nil {
			t.Fatalf("no failed reconnection attempt logged:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rt.SetAvailable(true)
	second := registered(t, ctx, rt)
	rsp, err := second.CreateContainer(ctx, &api.PodSandbox{Id: "p"}, &api.Container{Id: "c", PodSandboxId: "p"})
	if err != nil || len(rsp.GetAdjust().GetEnv()) != 1 {
		t.Fatalf("CreateContainer after reconnecting: %v %v", rsp, err)
	}
	if err := second.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := result(t, done); err != nil || ExitCode(err, io.Discard) != 0 {
		t.Errorf("Main after Shutdown = %v, want nil", err)
	}
	// No third connection after the Shutdown.
	wait, cancelWait := context.WithTimeout(ctx, ReconnectInitial+500*time.Millisecond)
	defer cancelWait()
	if p, err := rt.NextPlugin(wait); err == nil {
		t.Errorf("the plugin connected again after Shutdown: %v", p.Name())
	}

	log := readLog(t, logFile)
	for _, want := range []string{"reconnecting to runtime failed", "reconnected to runtime", "not reconnecting"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestNoReconnect checks -reconnect=false: the plugin ends with an error
// (status 1) when the runtime drops the connection.
func TestNoReconnect(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	rt := stubtest.NewRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	done := runMain(ctx, dialing(rt), "-idx", "10", "-reconnect=false")
	registered(t, ctx, rt).Close()
	err := result(t, done)
	if !errors.Is(err, stub.ErrConnectionLost) || ExitCode(err, io.Discard) != 1 {
		t.Errorf("Main after the connection was lost = %v, want a lost connection", err)
	}
}

// readLog returns the log file's contents and checks that every line
// has a time.
func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 2 {
		t.Errorf("log has %d lines:\n%s", len(lines), b)
	}
	for _, l := range lines {
		ts, ok := strings.CutPrefix(l, "time=")
		if !ok {
			t.Errorf("log line without a time: %q", l)
			continue
		}
		ts, _, _ = strings.Cut(ts, " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("log line's time %q: %v", ts, err)
		}
	}
	return string(b)
}

// TestLogFile checks -log-file: lines are appended to what the file
// holds, a new file is created with mode 0640 at most, every line has a
// time, and a failure is logged there too (standard error may be
// /dev/null).
func TestLogFile(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.log")
	if err := os.WriteFile(existing, []byte("time=2026-01-01T00:00:00Z level=INFO msg=earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var built bool
	var stderr bytes.Buffer
	err := Main(context.Background(), spec(&built), []string{"-log-file", existing}, &stderr)
	if err == nil || ExitCode(err, io.Discard) != 1 {
		t.Fatalf("Main = %v, want the build error", err)
	}
	log := readLog(t, existing)
	if !strings.HasPrefix(log, "time=2026-01-01T00:00:00Z level=INFO msg=earlier\n") ||
		!strings.Contains(log, `level=ERROR msg="plugin failed" error="test: not built"`) {
		t.Errorf("log file:\n%s", log)
	}
	if strings.Contains(stderr.String(), "level=") {
		t.Errorf("log lines on stderr despite -log-file: %q", stderr.String())
	}

	created := filepath.Join(dir, "new.log")
	_ = Main(context.Background(), spec(&built), []string{"-log-file", created}, io.Discard)
	fi, err := os.Stat(created)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&^LogFileMode != 0 {
		t.Errorf("log file created with mode %v, want at most %v", perm, os.FileMode(LogFileMode))
	}

	err = Main(context.Background(), spec(&built), []string{"-log-file", filepath.Join(dir, "missing", "x.log")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "opening the log file") {
		t.Errorf("unwritable log file: %v", err)
	}
}

// TestLoggerTime checks that every line has a time, also when a runtime
// launched the plugin (containerd does not stamp its plugins' output).
func TestLoggerTime(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "3")
	var b bytes.Buffer
	log, err := NewLogger(&b, "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello")
	if !strings.HasPrefix(b.String(), "time=") {
		t.Errorf("line without a time: %q", b.String())
	}
}

// TestMetricsAddr checks -metrics-addr: the plugin serves /readyz once
// registered and /metrics with the events it handled, and stops serving
// when it ends.
func TestMetricsAddr(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	rt := stubtest.NewRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	addr := freeLoopbackAddr(t)
	done := runMain(ctx, dialing(rt), "-idx", "10", "-metrics-addr", addr)
	p := registered(t, ctx, rt)
	if _, err := p.CreateContainer(ctx, &api.PodSandbox{Id: "p"}, &api.Container{Id: "c", PodSandboxId: "p"}); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		for {
			rsp, err := client.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rsp.Body)
			rsp.Body.Close()
			// Registration completes on the plugin's side just after the runtime's.
			if path != "/readyz" || rsp.StatusCode == http.StatusOK || ctx.Err() != nil {
				return rsp.StatusCode, string(b)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d", code)
	}
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez = %d", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `nri_stub_handler_calls_total{handler="CreateContainer"} 1`) {
		t.Errorf("/metrics:\n%s", body)
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Errorf("Main = %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("still serving after Main returned")
	}
}

// freeLoopbackAddr returns a loopback address with a port that was free.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestLogFormat checks -log-format: json writes one JSON object a line,
// each with a time, and a bad value is a usage error naming the flag.
func TestLogFormat(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	rt := stubtest.NewRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	done := runMain(ctx, dialing(rt), "-idx", "10", "-log-format", "json", "-log-file", logFile)
	registered(t, ctx, rt)
	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Main = %v", err)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 2 {
		t.Errorf("log has %d lines:\n%s", len(lines), b)
	}
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("not a JSON line: %q: %v", l, err)
			continue
		}
		ts, _ := rec["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("line without a time: %q", l)
		}
		if rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("line without level or message: %q", l)
		}
	}

	var built bool
	var stderr bytes.Buffer
	err = Main(context.Background(), spec(&built), []string{"-log-format", "yaml"}, &stderr)
	var usage *UsageError
	if !errors.As(err, &usage) || ExitCode(err, io.Discard) != 2 || !strings.Contains(err.Error(), "-log-format") ||
		!strings.Contains(stderr.String(), "-log-format") || built {
		t.Errorf("bad format: error %v, output %q", err, stderr.String())
	}
}

// TestScope checks that a plugin's scope flags reach the stub, which
// enforces them on a runtime that does not evaluate scopes.
func TestScope(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	rt := stubtest.NewRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	done := runMain(ctx, dialing(rt), "-idx", "10", "-namespace", "ml-*")
	p := registered(t, ctx, rt)
	if got := p.ConfigureResponse().GetScope().GetNamespaces(); len(got) != 1 || got[0] != "ml-*" {
		t.Errorf("scope sent: %v", p.ConfigureResponse().GetScope())
	}
	for ns, want := range map[string]int{"ml-team": 1, "default": 0} {
		rsp, err := p.CreateContainer(ctx, &api.PodSandbox{Id: ns, Namespace: ns}, &api.Container{Id: "c-" + ns, PodSandboxId: ns})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rsp.GetAdjust().GetEnv()); got != want {
			t.Errorf("namespace %s: %d variables added, want %d", ns, got, want)
		}
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Errorf("Main = %v", err)
	}
}

// TestFailRequest: -fail-request asks the runtime for the failure policy
// fail_request; without it the plugin asks for none.
func TestFailRequest(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	for _, flagged := range []bool{false, true} {
		rt := stubtest.NewRuntime(t)
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
		args := []string{"-idx", "10"}
		if flagged {
			args = append(args, "-fail-request")
		}
		done := runMain(ctx, dialing(rt), args...)
		p := registered(t, ctx, rt)
		if got := p.ConfigureResponse().GetFailurePolicy().GetFailRequest(); got != flagged {
			t.Errorf("-fail-request %v: failure policy sent %v", flagged, p.ConfigureResponse().GetFailurePolicy())
		}
		cancel()
		if err := result(t, done); err != nil {
			t.Errorf("Main = %v", err)
		}
	}
}

// TestMissingIndex: a plugin started by hand without -idx (the test
// binary's name gives no index) is told about the flag, not about the
// stub's option, and exits 2.
func TestMissingIndex(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	t.Setenv(api.PluginIdxEnvVar, "")
	spec := Spec{Name: "test", Setup: func(*flag.FlagSet) NewFunc {
		return func(*slog.Logger) (any, []stub.Option, error) { return envPlugin{}, nil, nil }
	}}
	var stderr bytes.Buffer
	err := Main(context.Background(), spec, []string{"-socket", filepath.Join(t.TempDir(), "none.sock")}, &stderr)
	var usage *UsageError
	if !errors.As(err, &usage) || ExitCode(err, &stderr) != 2 {
		t.Fatalf("error %v (exit %d), want a usage error", err, ExitCode(err, &stderr))
	}
	if msg := err.Error(); !strings.Contains(msg, "-idx is required") || strings.Contains(msg, "WithPluginIdx") {
		t.Errorf("error %q does not name the -idx flag (or names the Go option)", msg)
	}
}

// configPlugin records the configuration Configure gets.
type configPlugin struct{ got chan string }

func (p configPlugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	p.got <- config
	return 0, nil
}

func (configPlugin) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

// TestConfigFile: -config FILE is checked before the plugin connects and
// reaches its Configure handler when the runtime sends no configuration.
func TestConfigFile(t *testing.T) {
	t.Setenv(api.PluginSocketEnvVar, "")
	rt := stubtest.NewRuntime(t)
	got := make(chan string, 1)
	spec := Spec{Name: "test", Setup: func(*flag.FlagSet) NewFunc {
		return func(*slog.Logger) (any, []stub.Option, error) {
			return configPlugin{got: got}, []stub.Option{stub.WithDialer(rt.Dial)}, nil
		}
	}, Config: func(config string) error {
		if strings.Contains(config, "bad") {
			return errors.New("line 1: unknown key \"bad\" in config")
		}
		return nil
	}}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("events: all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("bad: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for name, tc := range map[string]struct {
		spec  Spec
		args  []string
		want  string
		usage bool
	}{
		"refused file": {spec, []string{"-idx", "10", "-config", bad}, `-config ` + bad + `: line 1: unknown key "bad"`, false},
		"missing file": {spec, []string{"-idx", "10", "-config", filepath.Join(dir, "none")}, "-config: open", false},
		"no config":    {Spec{Name: "test", Setup: spec.Setup}, []string{"-idx", "10", "-config", good}, "takes no configuration", true},
	} {
		var stderr bytes.Buffer
		err := Main(context.Background(), tc.spec, tc.args, &stderr)
		var usage *UsageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &usage) != tc.usage {
			t.Errorf("%s: error %v, want %q (usage error: %v)", name, err, tc.want, tc.usage)
		}
	}
	select {
	case c := <-got:
		t.Fatalf("a refused configuration reached Configure: %q", c)
	default:
	}

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	done := runMain(ctx, spec, "-idx", "10", "-config", good)
	registered(t, ctx, rt)
	select {
	case c := <-got:
		if c != "events: all\n" {
			t.Errorf("Configure got %q, want the file's content", c)
		}
	case <-ctx.Done():
		t.Fatal("Configure was not called")
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Errorf("Main: %v", err)
	}
}

// TestSkeletonHelpers checks the helpers the samples' Main functions are
// written with: ConfigParsedBy passes a configuration to the parser and
// returns its error, and NoFlags registers no flag and builds the plugin
// with the logger, without stub options.
func TestSkeletonHelpers(t *testing.T) {
	errBad := errors.New("bad configuration")
	var parsed []string
	check := ConfigParsedBy(func(config string) (int, error) {
		parsed = append(parsed, config)
		if config == "bad" {
			return 0, errBad
		}
		return len(config), nil
	})
	if err := check("good"); err != nil {
		t.Errorf("a good configuration: %v", err)
	}
	if err := check("bad"); !errors.Is(err, errBad) {
		t.Errorf("a bad configuration: %v, want the parser's error", err)
	}
	if want := []string{"good", "bad"}; strings.Join(parsed, ",") != strings.Join(want, ",") {
		t.Errorf("parsed %q, want %q", parsed, want)
	}

	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	log := slog.New(slog.DiscardHandler)
	var builtWith *slog.Logger
	newFunc := NoFlags(func(l *slog.Logger) any { builtWith = l; return envPlugin{} })(fs)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	p, opts, err := newFunc(log)
	if n != 0 || err != nil || opts != nil || builtWith != log {
		t.Errorf("NoFlags: %d flags, options %v, error %v, built with the logger: %v", n, opts, err, builtWith == log)
	}
	if _, ok := p.(envPlugin); !ok {
		t.Errorf("NoFlags built %T, want the plugin build returned", p)
	}
}
