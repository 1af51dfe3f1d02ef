package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
	"github.com/nrikit/nrikit/internal/wasmbuild"
)

// The documentation's command lines are run by TestDocumentedCommandLines
// (and the JavaScript ones by TestJSPluginDocumentedCommandLines): every
// example of every command's --help, every command in a code block of
// docs/cli.md and README.md, every inline command of theirs with flags and
// the commands in the example scenarios' headers. A command line the table
// docLineCases does not know fails the test, so that a new example is run
// too; a case the documentation no longer has fails it as well.

// repoRoot is the repository root, relative to the package's directory.
const repoRoot = "../.."

// docSources are the files whose command lines are run, relative to the
// repository root.
var docSources = []string{"docs/cli.md", "README.md", "deploy/README.md", "cmd/nri/examples/default.yaml",
	"cmd/nri/examples/serve.yaml", "cmd/nri/examples/wasm.yaml", "cmd/nri/examples/qos.yaml", "cmd/nri/examples/gpu-node.yaml"}

// docLine is a command line of the documentation, normalised: "nri ..."
// whether written as nri, go run ./cmd/nri or go install ... && nri;
// comments and repeated blanks removed.
type docLine struct {
	line   string
	source string // where it was found, for the error
}

// placeholder matches the synopses of the docs, which are not command
// lines: upper-case words (COMMAND, PATH) and optional parts.
var placeholder = regexp.MustCompile(`\b[A-Z][A-Z-]{2,}\b|\[|\.\.\.|\|`)

// normalizeDocLine returns the command line as the table keys it, or ""
// if s is not a command line of nri or of a plugin the docs run.
func normalizeDocLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	s = strings.TrimPrefix(s, "$ ")
	s = strings.Replace(s, "go install ./cmd/nri && ", "", 1)
	if rest, ok := strings.CutPrefix(s, "go run ./cmd/nri "); ok {
		s = "nri " + rest
	} else if s == "go run ./cmd/nri" {
		s = "nri"
	}
	if !strings.HasPrefix(s, "nri ") && !strings.HasPrefix(s, "node ") && !strings.HasPrefix(s, "GOOS=") {
		return ""
	}
	return strings.Join(strings.Fields(s), " ")
}

// documentedLines collects the command lines of the help texts and of the
// documentation files.
func documentedLines(t *testing.T) []docLine {
	t.Helper()
	var out []docLine
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, l := range strings.Split(c.Example, "\n") {
			if n := normalizeDocLine(l); n != "" {
				out = append(out, docLine{line: n, source: c.CommandPath() + " --help"})
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&globals{stdout: io.Discard, stderr: io.Discard}))

	inline := regexp.MustCompile("`([^`]+)`")
	for _, src := range docSources {
		data, err := os.ReadFile(filepath.Join(repoRoot, src))
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, l := range strings.Split(string(data), "\n") {
			where := fmt.Sprintf("%s:%d", src, i+1)
			trimmed := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(trimmed, "```"):
				fenced = !fenced
			case fenced:
				if n := normalizeDocLine(trimmed); n != "" {
					out = append(out, docLine{line: n, source: where})
				}
			case strings.HasSuffix(src, ".yaml"):
				if n := normalizeDocLine(strings.TrimLeft(trimmed, "# ")); n != "" && strings.HasPrefix(trimmed, "#  ") {
					out = append(out, docLine{line: n, source: where})
				}
			default:
				// An inline command with a flag is a command line; a bare
				// name (`nri run`) or a synopsis is not.
				for _, m := range inline.FindAllStringSubmatch(l, -1) {
					n := normalizeDocLine(m[1])
					if n != "" && strings.Contains(n, " -") && !placeholder.MatchString(n) {
						out = append(out, docLine{line: n, source: where})
					}
				}
			}
		}
	}
	return out
}

// docEnv is where the documented command lines run: a working directory
// with the files they name (my.yaml, ./logger, ./50-mine, ...), nri on
// PATH, and the paths of sockets and files they name replaced by
// temporary ones.
type docEnv struct {
	dir      string   // the working directory of most lines
	env      []string // the environment, nri on PATH
	replacer *strings.Replacer
}

func newDocEnv(t *testing.T) *docEnv {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	sock := shortSocketDir(t)
	port := freePort(t)
	e := &docEnv{
		dir: dir,
		env: append(os.Environ(), "NO_COLOR=1", "PATH="+filepath.Dir(nriBinary)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"XDG_CACHE_HOME="+filepath.Join(filepath.Dir(nriBinary), "xdg-cache")),
		replacer: strings.NewReplacer(
			"/tmp/nri.sock", filepath.Join(sock, "nri.sock"),
			"/tmp/check.sock", filepath.Join(sock, "check.sock"),
			"/var/run/nri/nri.sock", filepath.Join(sock, "node.sock"),
			"/var/log/nri/", dir+"/log/",
			"127.0.0.1:9090", port,
		),
	}
	if err := os.MkdirAll(filepath.Join(dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Plugins as the docs name them: sample plugins of this nri.
	wrapper := "#!/bin/sh\nexec " + nriBinary + " plugin logger \"$@\"\n"
	for _, name := range []string{"logger", "my-plugin", "50-myplugin", "bin/50-myplugin"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scenario, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "nri", "examples", "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"my.yaml", "my-scenario.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), scenario, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// shortSocketDir is a directory for unix sockets whose paths stay short.
func shortSocketDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "nri-doc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// freePort returns a loopback address with a port free right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// args returns the argument vector of a documented line, with the
// environment's paths; the first element is the program.
func (e *docEnv) args(line string) []string {
	f := strings.Fields(e.replacer.Replace(line))
	if f[0] == "nri" {
		f[0] = nriBinary
	}
	return f
}

// proc is a documented command line running in the background.
type proc struct {
	cmd    *exec.Cmd
	stdout lockedBuffer
	stderr lockedBuffer
	done   chan struct{}
	err    error
}

// lockedBuffer is a buffer written by a process's output copier and read
// by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs argv in dir in the background; it is killed at the test's
// end if it still runs.
func (e *docEnv) start(t *testing.T, dir string, argv []string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, e.env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// docWait bounds every wait of the test for a documented command.
var docWait = scaled(90 * time.Second)

// wait waits for the process to exit and returns its status.
func (p *proc) wait(t *testing.T, what string) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(docWait):
		_ = p.cmd.Process.Kill()
		t.Fatalf("%s did not exit within %v\nstdout:\n%s\nstderr:\n%s", what, docWait, p.stdout.String(), p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitFor polls until cond holds on the process's stdout or stderr.
func (p *proc) waitFor(t *testing.T, what string, cond func(stdout, stderr string) bool) {
	t.Helper()
	deadline := time.Now().Add(docWait)
	for !cond(p.stdout.String(), p.stderr.String()) {
		select {
		case <-p.done:
			if cond(p.stdout.String(), p.stderr.String()) {
				return
			}
			t.Fatalf("exited (%v) before %s\nstdout:\n%s\nstderr:\n%s", p.err, what, p.stdout.String(), p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v\nstdout:\n%s\nstderr:\n%s", what, docWait, p.stdout.String(), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// interrupt stops a process that serves until interrupted and returns its
// exit status.
func (p *proc) interrupt(t *testing.T, what string) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	return p.wait(t, what)
}

// expect checks the exit status of a finished process.
func (p *proc) expect(t *testing.T, what string, code int) {
	t.Helper()
	if got := p.wait(t, what); got != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, got, code, p.stdout.String(), p.stderr.String())
	}
}

// waitSocket waits for a unix socket to appear.
func waitSocket(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(docWait)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket %s within %v", path, docWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// socketOf returns the value of -socket or --socket in argv.
func socketOf(t *testing.T, argv []string) string {
	t.Helper()
	for i, a := range argv[:len(argv)-1] {
		if a == "-socket" || a == "--socket" {
			return argv[i+1]
		}
	}
	t.Fatalf("no socket in %v", argv)
	return ""
}

// A docCase runs one documented command line (argv, with the docEnv's
// paths) and checks that it does what the documentation says.
type docCase func(t *testing.T, e *docEnv, argv []string)

// succeeds runs the line in the working directory and expects exit 0 and
// want in its stdout.
func succeeds(want string) docCase {
	return inDir("", want)
}

// inDir runs the line in dir (relative to the repository root; "" for the
// environment's working directory) and expects exit 0 and want in its
// stdout.
func inDir(dir, want string) docCase {
	return func(t *testing.T, e *docEnv, argv []string) {
		d := e.dir
		if dir != "" {
			d = filepath.Join(repoRoot, dir)
		}
		p := e.start(t, d, argv)
		p.expect(t, strings.Join(argv, " "), 0)
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, p.stdout.String())
		}
	}
}

// jsonReportOK checks that stdout is a JSON report of a run whose every
// outcome was as expected.
func jsonReportOK(t *testing.T, stdout string) {
	t.Helper()
	var rep jsonReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || !rep.OK {
		t.Errorf("not a JSON report with ok true (%v):\n%s", err, stdout)
	}
}

// servesPlugin runs a documented nri serve and connects the sample logger
// to it as the docs' partner line does: serve plays the scenario and
// exits 0.
func servesPlugin(t *testing.T, e *docEnv, argv []string) {
	serve := e.start(t, e.dir, argv)
	socket := socketOf(t, argv)
	waitSocket(t, socket)
	plugin := e.start(t, e.dir, []string{nriBinary, "plugin", "logger", "-idx", "10", "-socket", socket})
	serve.expect(t, "nri serve", 0)
	if !strings.Contains(serve.stdout.String(), "every outcome as expected") {
		t.Errorf("nri serve's report does not say the run went as expected:\n%s", serve.stdout.String())
	}
	_ = plugin.cmd.Process.Kill()
}

// pluginOfServe runs a documented plugin line against nri serve, which
// plays its scenario once the plugin registered and exits 0.
func pluginOfServe(check func(t *testing.T, e *docEnv, serveStdout string)) docCase {
	return func(t *testing.T, e *docEnv, argv []string) {
		socket := socketOf(t, argv)
		serve := e.start(t, e.dir, []string{nriBinary, "serve", "--socket", socket, "--wait-plugins", "1", "--timeout", "60s", "--output", "json"})
		waitSocket(t, socket)
		plugin := e.start(t, e.dir, argv)
		serve.expect(t, "nri serve", 0)
		jsonReportOK(t, serve.stdout.String())
		if check != nil {
			check(t, e, serve.stdout.String())
		}
		// The runtime shuts the plugin down when it exits.
		plugin.expect(t, "the plugin", 0)
	}
}

// keepServing runs a documented nri serve --keep with n plugins: after the
// report it keeps serving (check runs then) until interrupted.
func keepServing(n int, check func(t *testing.T, serve *proc)) docCase {
	return func(t *testing.T, e *docEnv, argv []string) {
		serve := e.start(t, e.dir, argv)
		socket := socketOf(t, argv)
		waitSocket(t, socket)
		for i, name := range []string{"logger", "differ"}[:n] {
			e.start(t, e.dir, []string{nriBinary, "plugin", name, "-idx", fmt.Sprint(10 * (i + 1)), "-socket", socket})
		}
		serve.waitFor(t, "still serving", func(_, stderr string) bool { return strings.Contains(stderr, "still serving") })
		if check != nil {
			check(t, serve)
		}
		if code := serve.interrupt(t, "nri serve --keep"); code != 0 {
			t.Errorf("nri serve --keep interrupted after a good run: exit %d\n%s", code, serve.stderr.String())
		}
	}
}

// checksPlugin runs a documented nri check plugin and expects every check
// to pass.
func checksPlugin(t *testing.T, e *docEnv, argv []string) { passingChecks(t, e, argv) }

// passingChecks is checksPlugin, returning the report.
func passingChecks(t *testing.T, e *docEnv, argv []string) string {
	t.Helper()
	p := e.start(t, e.dir, argv)
	p.expect(t, "nri check plugin", 0)
	if !strings.Contains(p.stdout.String(), "result: PASS") && !strings.Contains(p.stdout.String(), `"failed": false`) {
		t.Errorf("no passing result:\n%s", p.stdout.String())
	}
	return p.stdout.String()
}

// docLineCases are the documented command lines and how each is run.
var docLineCases = map[string]docCase{
	"nri run":    succeeds("every outcome as expected"),
	"nri --help": succeeds("Exit codes:"),
	"nri run cmd/nri/examples/default.yaml --output json": inDir(".", `"ok": true`),
	"nri run --policy cmd/nri/examples/policies/env-only.yaml": func(t *testing.T, e *docEnv, argv []string) {
		p := e.start(t, repoRoot, argv)
		// The refusals the scenario does not expect fail the run.
		p.expect(t, "nri run --policy", 1)
		// The timeline marks the refused answers; the final specs show
		// what was applied.
		out := p.stdout.String()
		_, specs, _ := strings.Cut(out, "CONTAINERS")
		for _, want := range []string{"policy: cmd/nri/examples/policies/env-only.yaml (--policy)\n",
			"refused  20-device-injector (none of its changes applied)\n", "refused  30-hook-injector (none of its changes applied)\n",
			"refused  40-ulimit-adjuster (none of its changes applied, as expected)\n",
			"step 3 (createContainer train): the runtime refused 20-device-injector's answer to CreateContainer, which the step does not expect"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(specs, "linux.devices[") {
			t.Errorf("stdout: the devices the policy refuses were applied:\n%s", out)
		}
		if !strings.Contains(p.stderr.String(), "plugin 20-device-injector: changes to container train") {
			t.Errorf("stderr lacks the device-injector's refusal:\n%s", p.stderr.String())
		}
	},
	"nri run my.yaml --plugin ./50-myplugin --log-level info": succeeds("50-myplugin"),
	"nri run my-scenario.yaml --plugin ./bin/50-myplugin --output json": func(t *testing.T, e *docEnv, argv []string) {
		p := e.start(t, e.dir, argv)
		p.expect(t, "nri run", 0)
		jsonReportOK(t, p.stdout.String())
	},
	"nri run --output json": func(t *testing.T, e *docEnv, argv []string) {
		p := e.start(t, e.dir, argv)
		p.expect(t, "nri run", 0)
		jsonReportOK(t, p.stdout.String())
	},
	"nri run cmd/nri/examples/wasm.yaml": func(t *testing.T, e *docEnv, argv []string) {
		exampleModule(t) // the build nri run makes, from the Go build cache
		inDir(".", "every outcome as expected")(t, e, argv)
	},
	"nri run cmd/nri/examples/qos.yaml": func(t *testing.T, e *docEnv, argv []string) {
		needGo(t)
		inDir(".", "every outcome as expected")(t, e, argv)
	},
	"GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o 50-mine ./myplugin": func(t *testing.T, e *docEnv, argv []string) {
		// ./myplugin is the example WASM plugin's package; the module
		// must be the one nri run builds (same flags, same bytes).
		want, err := os.ReadFile(exampleModule(t))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(e.dir, "built-50-mine")
		env := slices.Clone(e.env)
		args := []string{wasmtest.GoTool(t)}
		for _, a := range argv {
			switch {
			case strings.Contains(a, "=") && !strings.HasPrefix(a, "-"):
				env = append(env, a)
			case a == "go":
			case a == "50-mine":
				args = append(args, out)
			case a == "./myplugin":
				args = append(args, ".")
			default:
				args = append(args, a)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ref := wasmbuild.Command(ctx, args[0], filepath.Join(repoRoot, "cmd", "nri", "examples", "wasm-env"), out)
		if !slices.Equal(ref.Args[1:], args[1:]) {
			t.Errorf("the documented build is %v, nri run's %v", args[1:], ref.Args[1:])
		}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env = ref.Dir, env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("the documented build made another module than nri run's (%v)", err)
		}
	},
	"nri run my.yaml --plugin ./50-mine --wasm-memory-limit 64Mi": func(t *testing.T, e *docEnv, argv []string) {
		data, err := os.ReadFile(exampleModule(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.dir, "50-mine"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		p := e.start(t, e.dir, argv)
		p.expect(t, "nri run", 0)
		if !regexp.MustCompile(`50-mine\s+wasm`).MatchString(p.stdout.String()) {
			t.Errorf("the WASM plugin is not in the report:\n%s", p.stdout.String())
		}
	},

	"nri serve --socket /tmp/nri.sock --wait-plugins 1":              servesPlugin,
	"nri serve --socket /tmp/nri.sock --wait-plugins 1 --timeout 2m": servesPlugin,
	"nri serve --socket /tmp/nri.sock --scenario cmd/nri/examples/serve.yaml --wait-plugins 1": func(t *testing.T, e *docEnv, argv []string) {
		// The scenario's header: run from the repository root.
		root, err := filepath.Abs(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		e.dir = root
		servesPlugin(t, e, argv)
	},
	"nri serve --socket /tmp/nri.sock --scenario my.yaml --wait-plugins 2 --timeout 1m --output json --keep": keepServing(2, func(t *testing.T, serve *proc) {
		serve.waitFor(t, "a JSON report", func(stdout, _ string) bool { return json.Valid([]byte(stdout)) })
		jsonReportOK(t, serve.stdout.String())
	}),
	"nri serve --socket /tmp/nri.sock --metrics-addr 127.0.0.1:9090 --keep": keepServing(1, func(t *testing.T, serve *proc) {
		m := regexp.MustCompile(`serving metrics on http://(127\.0\.0\.1:\d+)/metrics`).FindStringSubmatch(serve.stderr.String())
		if m == nil {
			t.Fatalf("no metrics address in\n%s", serve.stderr.String())
		}
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		rsp, err := client.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		body, _ := io.ReadAll(rsp.Body)
		if !strings.Contains(string(body), `nri_plugin_requests_total{plugin="10-logger"`) {
			t.Errorf("/metrics lacks the plugin's requests:\n%s", body)
		}
	}),
	"nri plugin logger -idx 10 -socket /tmp/nri.sock": pluginOfServe(nil),
	"nri plugin logger -idx 10 -socket /tmp/nri.sock -events CreateContainer,StopContainer -namespace ml": pluginOfServe(func(t *testing.T, _ *docEnv, stdout string) {
		var rep jsonReport
		_ = json.Unmarshal([]byte(stdout), &rep)
		for _, p := range rep.Plugins {
			if p.ID == "10-logger" && !slices.Equal(p.Events, []string{"CreateContainer", "StopContainer"}) {
				t.Errorf("the logger subscribed to %v", p.Events)
			}
		}
	}),
	"nri plugin gpu-env -idx 50 -socket /var/run/nri/nri.sock -log-file /var/log/nri/50-gpu-env.log": pluginOfServe(func(t *testing.T, e *docEnv, _ string) {
		// The plugin writes its log to the file while it runs.
		deadline := time.Now().Add(docWait)
		for {
			if b, err := os.ReadFile(filepath.Join(e.dir, "log", "50-gpu-env.log")); err == nil && len(b) > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the plugin wrote nothing to its -log-file")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}),

	"nri check plugin --name 10-logger -- nri plugin logger":                   checksPlugin,
	"nri check plugin --name 20-logger --verbose ./logger":                     checksPlugin,
	"nri check plugin --name 20-logger --verbose -- ./logger -log-level debug": checksPlugin,
	"nri check plugin -- ./my-plugin":                                          checksPlugin,
	"nri check plugin ./10-template.wasm": func(t *testing.T, e *docEnv, argv []string) {
		data, err := os.ReadFile(exampleModule(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.dir, "10-template.wasm"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		checksPlugin(t, e, argv)
	},
	"nri check plugin --socket /tmp/check.sock --output json": func(t *testing.T, e *docEnv, argv []string) {
		check := e.start(t, e.dir, argv)
		socket := socketOf(t, argv)
		waitSocket(t, socket)
		e.start(t, e.dir, []string{nriBinary, "plugin", "logger", "-idx", "10", "-socket", socket})
		check.expect(t, "nri check plugin --socket", 0)
		var rep struct {
			Failed  bool              `json:"failed"`
			Results []json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal([]byte(check.stdout.String()), &rep); err != nil || rep.Failed || len(rep.Results) == 0 {
			t.Errorf("not a passing JSON report (%v):\n%s", err, check.stdout.String())
		}
	},
	"nri check policy /etc/nri/policy.yaml": func(t *testing.T, e *docEnv, argv []string) {
		// The sample plugins' policy stands for /etc/nri/policy.yaml.
		data, err := os.ReadFile(filepath.Join(repoRoot, "policy", "testdata", "samples.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(e.dir, "policy.yaml")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		argv[len(argv)-1] = file
		check := e.start(t, e.dir, argv)
		check.expect(t, "nri check policy", 0)
		if out := check.stdout.String(); !strings.HasPrefix(out, file+": valid: 8 grants") {
			t.Errorf("nri check policy: stdout\n%s", out)
		}
		typo := filepath.Join(e.dir, "typo.yaml")
		if err := os.WriteFile(typo, []byte("grants:\n  - plugins: [gpu-env]\n    adjust:\n      evn: [A]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		bad := e.start(t, e.dir, []string{argv[0], "check", "policy", typo})
		bad.expect(t, "nri check policy with a typo", 3)
		if out := bad.stdout.String(); !strings.HasPrefix(out, typo+":4: unknown key \"evn\"") {
			t.Errorf("nri check policy with a typo: stdout\n%s", out)
		}
	},
	"nri check policy deploy/policy/policy.yaml": func(t *testing.T, e *docEnv, argv []string) {
		// From the repository's root, as documented: the shipped node policy
		// is valid, has a grant per overlay and no default grant.
		check := e.start(t, repoRoot, argv)
		check.expect(t, "nri check policy deploy/policy/policy.yaml", 0)
		out := check.stdout.String()
		entries, err := os.ReadDir(filepath.Join(repoRoot, "deploy", "kustomize", "overlays"))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("deploy/policy/policy.yaml: valid: %d grants", len(entries)); !strings.HasPrefix(out, want) {
			t.Errorf("stdout does not start with %q:\n%s", want, out)
		}
		for _, o := range entries {
			if !strings.Contains(out, " plugins="+o.Name()+" ") {
				t.Errorf("no grant of %s:\n%s", o.Name(), out)
			}
		}
		if !strings.HasSuffix(out, "deploy/policy/policy.yaml: no default grant where=all allows=none\n") {
			t.Errorf("the shipped policy has a default grant:\n%s", out)
		}
	},
	"nri check plugin --policy deploy/policy/policy.yaml --name 50-gpu-env -- nri plugin gpu-env": func(t *testing.T, e *docEnv, argv []string) {
		// From the repository's root: gpu-env's answers are within its
		// grant in the shipped node policy, and the check says which.
		e.dir = repoRoot
		out := passingChecks(t, e, argv)
		if !strings.Contains(out, "PASS  answers within its grant") ||
			!regexp.MustCompile(`50-gpu-env's grant is deploy/policy/policy\.yaml:\d+: grants\[2\], which allows every answer`).MatchString(out) {
			t.Errorf("no passing grant check:\n%s", out)
		}
	},
	"nri check policy /etc/nri/policy.yaml --plugin-dir /opt/nri/plugins": func(t *testing.T, e *docEnv, argv []string) {
		// The sample plugins' policy with a grant for batchenv added,
		// as /etc/nri/policy.yaml; a plugin directory with the logger and
		// a WASM module 50-batchenv.wasm.
		data, err := os.ReadFile(filepath.Join(repoRoot, "policy", "testdata", "samples.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(e.dir, "policy.yaml")
		data = append(data, "  - plugins: [batchenv]\n    adjust: {env: [BATCH_*]}\n"...)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(e.dir, "plugins")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "50-batchenv.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "10-logger"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		argv[3], argv[5] = file, dir
		check := e.start(t, e.dir, argv)
		check.expect(t, "nri check policy --plugin-dir", 0)
		// The listing, with the documented paths, is docs/cli.md's.
		_, listing, ok := strings.Cut(check.stdout.String(), "plugins of ")
		listing = strings.NewReplacer(file, "/etc/nri/policy.yaml", dir, "/opt/nri/plugins").Replace("plugins of " + listing)
		doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !strings.Contains(string(doc), "```\n"+listing+"```\n") ||
			!strings.Contains(listing, "warning: /etc/nri/policy.yaml:") {
			t.Errorf("nri check policy --plugin-dir lists, with the documented paths:\n%s\nwhich docs/cli.md does not show", listing)
		}
	},
	"nri check runtime --socket /var/run/nri/nri.sock": func(t *testing.T, e *docEnv, argv []string) {
		socket := socketOf(t, argv)
		serve := e.start(t, e.dir, []string{nriBinary, "serve", "--socket", socket, "--wait-plugins", "0", "--keep"})
		serve.waitFor(t, "still serving", func(_, stderr string) bool { return strings.Contains(stderr, "still serving") })
		checksPlugin(t, e, argv)
		serve.interrupt(t, "nri serve")
	},

	"nri check runtime --socket /var/run/nri/nri.sock --cri-socket /run/containerd/containerd.sock --image registry.k8s.io/pause:3.10 --output json --junit nri-check.xml": checksRuntimeCRI,

	// The JavaScript plugin's lines run in TestJSPluginDocumentedCommandLines.
	"nri check plugin -- node plugins/js-env/plugin.js":             nil,
	"node plugins/js-env/plugin.js --socket /tmp/nri.sock --idx 50": nil,

	// README's plugin of your own, outside the repository: its lines run,
	// in order and with the plugin they build, in deploy/manifests'
	// TestPluginOutsideRepository.
	"nri check plugin ./50-batchenv":                          nil,
	"nri run batch.yaml --plugin ./50-batchenv":               nil,
	"nri run batch.yaml --plugin ./50-batchenv --output json": nil,
}

// outsideLine reports whether a documented line is one of README's plugin
// of your own, which deploy/manifests' TestPluginOutsideRepository runs.
func outsideLine(line string) bool { return strings.Contains(line, "50-batchenv") }

// jsLine reports whether a documented line needs node and the JavaScript
// plugin's packages.
func jsLine(line string) bool { return strings.Contains(line, "plugins/js-env") }

// TestDocumentedCommandLines runs every command line of the help texts and
// the documentation (see docLineCases).
func TestDocumentedCommandLines(t *testing.T) {
	found := map[string][]string{}
	for _, l := range documentedLines(t) {
		found[l.line] = append(found[l.line], l.source)
	}
	lines := make([]string, 0, len(found))
	for l := range found {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	for _, l := range lines {
		run, known := docLineCases[l]
		if !known {
			t.Errorf("%s: the command line %q is not run by this test: add it to docLineCases", strings.Join(found[l], ", "), l)
			continue
		}
		if jsLine(l) || outsideLine(l) {
			continue
		}
		t.Run(l, func(t *testing.T) {
			e := newDocEnv(t)
			run(t, e, e.args(l))
		})
	}
	for l := range docLineCases {
		if _, ok := found[l]; !ok {
			t.Errorf("docLineCases has %q, which no help text or document has any more", l)
		}
	}
}

// TestJSPluginDocumentedCommandLines runs the documented command lines of
// the JavaScript plugin (with make test-js, which installs its packages).
func TestJSPluginDocumentedCommandLines(t *testing.T) {
	node, _ := runtimetest.JSPlugin(t, filepath.Join(repoRoot, "plugins", "js-env"))
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	withNode := func(argv []string) []string {
		if argv[0] == "node" {
			argv[0] = node
		}
		for i, a := range argv {
			if a == "node" && i > 0 && argv[i-1] == "--" {
				argv[i] = node
			}
		}
		return argv
	}
	t.Run("check plugin", func(t *testing.T) {
		e := newDocEnv(t)
		e.dir = root
		checksPlugin(t, e, withNode(e.args("nri check plugin -- node plugins/js-env/plugin.js")))
	})
	t.Run("serve", func(t *testing.T) {
		e := newDocEnv(t)
		e.dir = root
		pluginOfServe(nil)(t, e, withNode(e.args("node plugins/js-env/plugin.js --socket /tmp/nri.sock --idx 50")))
	})
}

// makeTarget matches a make command line of the documentation: `make
// TARGET` inline, or a line of a fenced block that starts with it.
var makeTarget = regexp.MustCompile("(?m)(?:`|^)make ([a-z][a-z0-9-]*)")

// ruleTargets matches the targets of a Makefile's rules ("a b: deps"),
// not its variables ("A := x").
var ruleTargets = regexp.MustCompile(`(?m)^([a-zA-Z0-9_. $()-]+?):(?:[^=]|$)`)

// TestDocumentedMakeTargets checks that every make target the
// documentation names is a target of the Makefile: a renamed or removed
// target fails the test until the documentation follows.
func TestDocumentedMakeTargets(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range ruleTargets.FindAllStringSubmatch(string(mk), -1) {
		for _, name := range strings.Fields(m[1]) {
			targets[name] = true
		}
	}
	if !targets["test"] || !targets["helm"] || !targets["test-cluster"] {
		t.Fatalf("the Makefile's targets %v lack test, helm or test-cluster: the parse is wrong", targets)
	}
	for _, src := range []string{"README.md", "docs/cli.md", "deploy/README.md", "deploy/images/README.md", "plugins/template/README.md"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, src))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range makeTarget.FindAllStringSubmatch(string(data), -1) {
			if !targets[m[1]] {
				t.Errorf("%s names make %s, which the Makefile does not have", src, m[1])
			}
		}
	}
}
