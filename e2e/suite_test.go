package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/e2e/harness"
)

// suite holds what TestMain built for every test.
var suite struct {
	tools    *harness.Tools
	imageTar string
	bin      string // nrikit's binaries: nri, the sample plugins, template
	repo     string // nrikit's repository root
	goBin    string // the go command (GO, or go)
	node     string // node, empty if missing
	// nrikit is set when the runtime runs on nrikit's runtime library
	// (NRIKIT_E2E_RUNTIME=nrikit: containerd or CRI-O built with
	// compat/nri, see docs/embedding.md) instead of upstream's NRI.
	nrikit bool
	// crio is set when the runtime under test is CRI-O (NRIKIT_E2E_CRI=crio)
	// instead of containerd.
	crio bool
	// busyboxTar is the image CRI-O's own NRI suite runs (CRI-O runs only).
	busyboxTar string
}

// runtimeEnv selects the NRI implementation inside the runtime:
// "upstream" (default, the runtime as released) or "nrikit".
const runtimeEnv = "NRIKIT_E2E_RUNTIME"

// criEnv selects the runtime under test: "containerd" (default) or
// "crio".
const criEnv = "NRIKIT_E2E_CRI"

// samplePlugins are the sample plugins of `nri plugin NAME`, also built
// as standalone binaries for pre-installation.
var samplePlugins = []string{"differ", "logger", "device-injector", "hook-injector", "ulimit-adjuster", "gpu-env"}

var keep = flag.Bool("keep", os.Getenv("NRIKIT_E2E_KEEP") != "", "keep each test's runtime directory (also NRIKIT_E2E_KEEP=1)")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL: nrikit e2e: "+format+"\n", args...)
		return 1
	}
	// Never skip: a machine where the suite cannot run fails it, saying why.
	if err := harness.Preflight(); err != nil {
		return fail("cannot run on this machine: %v", err)
	}
	// Interrupted while building, stop building; interrupted while
	// testing, clean up every runtime before exiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	wd, err := os.Getwd()
	if err != nil {
		return fail("%v", err)
	}
	suite.repo, suite.goBin = filepath.Dir(wd), goBin
	cache := os.Getenv("NRIKIT_E2E_BIN")
	if cache == "" {
		cache = harness.DefaultBinCache(wd)
	}
	phase := func(name string, start time.Time) {
		fmt.Fprintf(os.Stderr, "e2e: %s took %s\n", name, time.Since(start).Round(time.Millisecond))
	}

	switch rt := os.Getenv(runtimeEnv); rt {
	case "", "upstream":
	case "nrikit":
		suite.nrikit = true
	default:
		return fail("%s=%q: want upstream or nrikit", runtimeEnv, rt)
	}
	switch cri := os.Getenv(criEnv); cri {
	case "", "containerd":
	case "crio":
		suite.crio = true
	default:
		return fail("%s=%q: want containerd or crio", criEnv, cri)
	}

	start := time.Now()
	if suite.crio {
		compat := ""
		if suite.nrikit {
			compat = filepath.Join(suite.repo, "compat", "criobuild")
		}
		if suite.tools, err = harness.EnsureCrio(ctx, goBin, cache, compat, os.Stderr); err != nil {
			return fail("%v", err)
		}
		phase("CRI-O, crictl, runc and conmon", start)
	} else {
		if suite.tools, err = harness.EnsureTools(ctx, goBin, cache, os.Stderr); err != nil {
			return fail("%v", err)
		}
		phase("containerd, crictl and runc", start)
	}

	// Named after this process, so that a later run can tell it is stale.
	work := filepath.Join(os.TempDir(), fmt.Sprintf("nrikit-e2e-build-%d", os.Getpid()))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(work)
	start = time.Now()
	imgBin := filepath.Join(work, "images")
	static := harness.GoBuild{Go: goBin, Dir: wd, Out: imgBin, Env: []string{"CGO_ENABLED=0"}, Packages: []string{"./cmd/pause", "./cmd/workload", "./cmd/runc-wrap"}}
	if err := static.Run(ctx, os.Stderr); err != nil {
		return fail("%v", err)
	}
	suite.imageTar = filepath.Join(work, "images.tar")
	if err := harness.WriteImages(suite.imageTar,
		harness.Pause(imgBin),
		harness.Image{Ref: harness.WorkloadImage, Binary: filepath.Join(imgBin, "workload"), Name: "workload"},
	); err != nil {
		return fail("writing images: %v", err)
	}
	if suite.crio {
		suite.tools.Crio.RuncWrap = filepath.Join(imgBin, "runc-wrap")
		suite.busyboxTar = filepath.Join(work, "busybox.tar")
		if err := writeBusyboxImage(ctx, suite.busyboxTar, suite.tools.Crio.Busybox, crioNRIImage); err != nil {
			return fail("writing the busybox image: %v", err)
		}
	}
	phase("images", start)

	start = time.Now()
	suite.bin = filepath.Join(work, "nrikit")
	pkgs := []string{"./cmd/nri", "./plugins/template"}
	for _, p := range samplePlugins {
		pkgs = append(pkgs, "./plugins/"+p+"/cmd/"+p)
	}
	if err := (harness.GoBuild{Go: goBin, Dir: suite.repo, Out: suite.bin, Packages: pkgs}).Run(ctx, os.Stderr); err != nil {
		return fail("%v", err)
	}
	// A plugin built with upstream's containerd/nri v0.12.5 stub, from the
	// interop module (see its Makefile target for the flag).
	upstream := harness.GoBuild{Go: goBin, Dir: filepath.Join(suite.repo, "interop"), Out: suite.bin,
		Flags:    []string{"-ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore"},
		Packages: []string{"./internal/upstreamplugin"}}
	if err := upstream.Run(ctx, os.Stderr); err != nil {
		return fail("%v", err)
	}
	phase("nrikit's binaries", start)
	if suite.nrikit && !suite.crio {
		// containerd v2.4.2 with github.com/containerd/nri replaced by
		// compat/nri: built from this checkout every run (the go build
		// cache keeps it quick), its ctr and shim stay the released ones.
		start = time.Now()
		build := harness.GoBuild{Go: goBin, Dir: filepath.Join(suite.repo, "compat", "containerdbuild"), Out: filepath.Join(work, "containerd-nrikit"),
			Packages: []string{"github.com/containerd/containerd/v2/cmd/containerd"}}
		if err := build.Run(ctx, os.Stderr); err != nil {
			return fail("building containerd on nrikit: %v", err)
		}
		suite.tools.Containerd = filepath.Join(work, "containerd-nrikit", "containerd")
		phase("containerd on nrikit (compat/nri)", start)
	}
	if p, err := exec.LookPath("node"); err == nil {
		suite.node = p
	}
	if swept, err := harness.SweepStale(ctx, "", suite.tools.Runc); err != nil || len(swept) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: cleaned up after earlier runs: %v %v\n", swept, err)
	}
	stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping every runtime\n", s)
		live.Range(func(k, _ any) bool {
			_ = k.(harness.Runtime).Close(context.Background(), false)
			return true
		})
		os.RemoveAll(work)
		os.Exit(1)
	}()
	return m.Run()
}

// live holds the tests' runtime instances not closed yet, for cleaning
// up on SIGINT or SIGTERM.
var live sync.Map

// runtime is one test's containerd or CRI-O with its CRI client.
type runtime struct {
	harness.Runtime
	*harness.Layout
	t   *testing.T
	ctx context.Context
	cri *harness.CRI
}

// newRuntime prepares the runtime under test for t (started by start)
// and registers its cleanup: on failure the runtime's log tail is
// printed.
func newRuntime(t *testing.T, opts harness.Options) *runtime {
	t.Helper()
	opts.Tools, opts.ImageTar = suite.tools, suite.imageTar
	var c harness.Runtime
	var err error
	if suite.crio {
		c, err = harness.NewCrio("", opts)
	} else {
		c, err = harness.NewContainerd("", opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		t.Cleanup(cancel)
	}
	r := &runtime{Runtime: c, Layout: c.Paths(), t: t, ctx: ctx, cri: c.CRI()}
	live.Store(c, true)
	t.Cleanup(func() {
		defer live.Delete(c)
		if t.Failed() {
			t.Logf("%s log tail (%s):\n%s", c.Kind(), r.LogPath, r.LogTail(60))
		}
		if err := c.Close(context.Background(), *keep); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return r
}

func (r *runtime) start() {
	r.t.Helper()
	if err := r.Start(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

// preinstall puts the plugin binary into containerd's plugin directory
// as IDX-NAME, with conf (if not empty) as its configuration file. With
// logged set it installs a wrapper script that sends the plugin's
// stderr to logs/IDX-NAME.log, since containerd discards it; the log's
// path is returned.
func (r *runtime) preinstall(idxName, binary string, args []string, logged bool, conf string) string {
	r.t.Helper()
	dst := filepath.Join(r.PluginDir, idxName)
	logPath := filepath.Join(r.Dir, "logs", idxName+".log")
	var err error
	if logged || len(args) > 0 {
		if err = os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			r.t.Fatal(err)
		}
		redirect := ""
		if logged {
			redirect = " 2>>" + shellQuote(logPath)
		}
		q := make([]string, 0, len(args)+1)
		for _, a := range append([]string{binary}, args...) {
			q = append(q, shellQuote(a))
		}
		err = os.WriteFile(dst, []byte("#!/bin/sh\nexec "+strings.Join(q, " ")+` "$@"`+redirect+"\n"), 0o755)
	} else {
		err = copyFile(binary, dst)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	if conf != "" {
		if err := os.WriteFile(filepath.Join(r.PluginConfigDir, idxName+".conf"), []byte(conf), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	return logPath
}

// waitPreinstalled waits until containerd has synchronized the
// pre-installed plugins idxNames n times.
func (r *runtime) waitPreinstalled(n int, idxNames ...string) {
	r.t.Helper()
	for _, in := range idxNames {
		err := harness.Eventually(r.ctx, 20*time.Second, func() error {
			if got := synchronized(r.Log(), in, true); got < n {
				return fmt.Errorf("pre-installed plugin %s synchronized %d times, want %d", in, got, n)
			}
			return nil
		})
		if err != nil {
			r.t.Fatal(err)
		}
	}
}

// external starts argv as an external plugin registering as idxName,
// stops it at the end of the test, and waits until containerd has
// synchronized it.
func (r *runtime) external(idxName string, argv ...string) *harness.Process {
	r.t.Helper()
	p := r.startExternal(idxName, argv...)
	r.waitExternal(p, idxName, 1)
	return p
}

func (r *runtime) startExternal(idxName string, argv ...string) *harness.Process {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Join(r.Dir, "logs"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	p, err := harness.StartProcess(idxName, filepath.Join(r.Dir, "logs", idxName+".log"), nil, argv...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		if r.t.Failed() {
			r.t.Logf("plugin %s output:\n%s", idxName, p.Log())
		}
		if err := p.Stop(); err != nil {
			r.t.Error(err)
		}
	})
	return p
}

func (r *runtime) waitExternal(p *harness.Process, idxName string, n int) {
	r.t.Helper()
	err := harness.Eventually(r.ctx, 20*time.Second, func() error {
		if got := synchronized(r.Log(), idxName, false); got >= n {
			return nil
		}
		if done, code := p.Exited(); done {
			return harness.Permanent(fmt.Errorf("plugin %s exited with status %d before registering:\n%s", idxName, code, p.Log()))
		}
		return fmt.Errorf("plugin %s not synchronized %d times", idxName, n)
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// samplePlugin starts `nri plugin NAME -idx IDX -socket S args...` as an
// external plugin.
func (r *runtime) samplePlugin(name, idx string, args ...string) *harness.Process {
	r.t.Helper()
	argv := append([]string{filepath.Join(suite.bin, "nri"), "plugin", name, "-idx", idx, "-socket", r.NRISocket}, args...)
	return r.external(idx+"-"+pluginName(name, args), argv...)
}

// pluginName is the -name in args, or name.
func pluginName(name string, args []string) string {
	if i := slices.Index(args, "-name"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return name
}

// run starts a pod with one container and returns the container's
// inspection, failing the test on error.
func (r *runtime) run(pod harness.PodConfig, ctr harness.ContainerConfig) (podID, ctrID string, info *harness.ContainerInfo) {
	r.t.Helper()
	podID, ctrID, info, err := r.cri.RunContainer(r.ctx, pod, ctr)
	if err != nil {
		r.t.Fatal(err)
	}
	if info.State != "CONTAINER_RUNNING" || info.Pid <= 0 {
		r.t.Fatalf("container %s: state %s pid %d", ctr.Metadata.Name, info.State, info.Pid)
	}
	return podID, ctrID, info
}

// evidence logs one line of key evidence, collected for the issue's
// closing note (`go test -v | grep EVIDENCE`).
func evidence(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("EVIDENCE %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

// specEnv returns the value of key in the spec's process environment.
func specEnv(s *specs.Spec, key string) (string, bool) {
	if s.Process == nil {
		return "", false
	}
	for _, kv := range s.Process.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// wantEnv checks key=value in both the spec and the process's
// environment.
func wantEnv(t *testing.T, info *harness.ContainerInfo, key, value string) {
	t.Helper()
	if v, ok := specEnv(info.Spec, key); !ok || v != value {
		t.Errorf("spec process.env %s = %q (present %v), want %q", key, v, ok, value)
	}
	env, err := harness.Environ(info.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env[key]; !ok || v != value {
		t.Errorf("/proc/%d/environ %s = %q (present %v), want %q", info.Pid, key, v, ok, value)
		return
	}
	evidence(t, "spec process.env and /proc/%d/environ have %s=%s", info.Pid, key, value)
}

// wantNoEnv checks that key is in neither the spec nor the process's
// environment.
func wantNoEnv(t *testing.T, info *harness.ContainerInfo, key string) {
	t.Helper()
	if v, ok := specEnv(info.Spec, key); ok {
		t.Errorf("spec process.env has %s=%s, want none", key, v)
	}
	env, err := harness.Environ(info.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env[key]; ok {
		t.Errorf("/proc/%d/environ has %s=%s, want none", info.Pid, key, v)
	}
}

// wantLog waits until a plugin's log holds substr.
func wantLog(t *testing.T, ctx context.Context, p *harness.Process, substr string) {
	t.Helper()
	if err := p.WaitLog(ctx, 10*time.Second, substr, 1); err != nil {
		t.Error(err)
	}
}

// wantFileLog waits until the file at path holds substr.
func wantFileLog(t *testing.T, ctx context.Context, path, substr string) string {
	t.Helper()
	var line string
	err := harness.Eventually(ctx, 10*time.Second, func() error {
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, substr) {
				line = l
				return nil
			}
		}
		return fmt.Errorf("%s has no %q:\n%s", path, substr, b)
	})
	if err != nil {
		t.Error(err)
	}
	return line
}

// lineWith returns the first line of s that holds substr.
func lineWith(s, substr string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// logQuote quotes s as it appears inside a quoted message of
// containerd's (logrus) log: \"s\".
func logQuote(s string) string { return `\"` + s + `\"` }

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rpcDesc returns the description of the gRPC error in crictl's
// output (klog quotes it: `err="rpc error: code = ... desc = TEXT"`),
// unquoted, or the whole output.
func rpcDesc(out string) string {
	i := strings.Index(out, "desc = ")
	if i < 0 {
		return strings.TrimSpace(out)
	}
	var b strings.Builder
	for rest := out[i+len("desc = "):]; rest != ""; rest = rest[1:] {
		switch {
		case strings.HasPrefix(rest, `\"`):
			b.WriteByte('"')
			rest = rest[1:]
		case rest[0] == '"' || rest[0] == '\n':
			return b.String()
		default:
			b.WriteByte(rest[0])
		}
	}
	return b.String()
}

// errorText returns err's text, with a crictl failure's output.
func errorText(err error) string {
	var ce *harness.CommandError
	if errors.As(err, &ce) {
		return ce.Output
	}
	return err.Error()
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// synchronized counts the lines of the runtime's log saying that NRI
// synchronized the plugin idxName: upstream's messages, or nrikit's
// "plugin synchronized" record naming the plugin (suite.nrikit).
func synchronized(log, idxName string, preinstalled bool) int {
	return len(synchronizedLines(log, idxName, preinstalled))
}

// lastSynchronized returns the last line synchronized counts.
func lastSynchronized(log, idxName string, preinstalled bool) string {
	lines := synchronizedLines(log, idxName, preinstalled)
	if len(lines) == 0 {
		return ""
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

func synchronizedLines(log, idxName string, preinstalled bool) []string {
	var lines []string
	for _, line := range strings.Split(log, "\n") {
		var ok bool
		switch {
		case suite.nrikit:
			ok = strings.Contains(line, `msg="plugin synchronized"`) && slices.Contains(strings.Fields(line), "plugin="+idxName)
		case preinstalled:
			ok = strings.Contains(line, "pre-installed NRI plugin "+logQuote(idxName)+" synchronization success")
		default:
			ok = strings.Contains(line, "plugin "+logQuote(idxName)+" connected and synchronized")
		}
		if ok {
			lines = append(lines, line)
		}
	}
	return lines
}
