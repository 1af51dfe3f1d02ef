package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
)

// workDir holds the guests and the driver, built once per test binary.
var workDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "interop-wasm-")
	if err != nil {
		panic(err)
	}
	workDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// build builds the program in testdata/name once, with the go command of
// $GO (or "go") and its own flags (never the race detector): the guests
// with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, the driver for this
// machine; -trimpath, so that a clone elsewhere reuses the compiled packages.
func build(t *testing.T, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := built[name]; ok {
		return path
	}
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	out := filepath.Join(workDir, name)
	args := []string{"build", "-trimpath", "-o", out}
	env := append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if name == "driver" {
		args = append(args, "-ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore")
	} else {
		out += ".wasm"
		args = []string{"build", "-trimpath", "-buildmode=c-shared", "-o", out}
		env = append(env, "GOOS=wasip1", "GOARCH=wasm")
	}
	cmd := exec.Command(goTool, append(args, "./testdata/"+name)...)
	cmd.Env = env
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, b)
	}
	t.Logf("built %s in %v", name, time.Since(start).Round(time.Millisecond))
	built[name] = out
	return out
}

// request is the CreateContainer request of the tests.
func request() *api.CreateContainerRequest {
	return &api.CreateContainerRequest{Pod: fixture.Pod(), Container: fixture.Container(api.ContainerState_CONTAINER_UNKNOWN)}
}

// drive runs the driver with args plus the request and returns the
// response and the driver's log.
func drive(t *testing.T, args ...string) (*api.CreateContainerResponse, string) {
	t.Helper()
	dir := t.TempDir()
	reqFile, rspFile := filepath.Join(dir, "req.pb"), filepath.Join(dir, "rsp.pb")
	b, err := proto.Marshal(request())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reqFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, build(t, "driver"), append(args, "-req", reqFile, "-out", rspFile)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver %v: %v\n%s", args, err, log.String())
	}
	if b, err = os.ReadFile(rspFile); err != nil {
		t.Fatal(err)
	}
	rsp := &api.CreateContainerResponse{}
	if err := proto.Unmarshal(b, rsp); err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s:\n%s", args[1], lastLines(log.String(), 3))
	return rsp, log.String()
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// viaHost runs the request through the guest name on nrikit's host.
func viaHost(t *testing.T, name string) (*api.CreateContainerResponse, string) {
	t.Helper()
	return drive(t, "-mode", "host", "-wasm", build(t, name), "-cache", filepath.Join(workDir, "cache"))
}

// viaUpstream runs the request through upstream's runtime with the guest
// name installed as an executable plugin file.
func viaUpstream(t *testing.T, name string) (*api.CreateContainerResponse, string) {
	t.Helper()
	dir := t.TempDir()
	code, err := os.ReadFile(build(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "10-"+name), code, 0o755); err != nil {
		t.Fatal(err)
	}
	return drive(t, "-mode", "upstream", "-dir", dir)
}

// wantAdjusted checks the guests' common adjustment.
func wantAdjusted(t *testing.T, who string, adj *api.ContainerAdjustment) {
	t.Helper()
	var env string
	for _, kv := range adj.GetEnv() {
		if kv.GetKey() == "WASM_GUEST" {
			env = kv.GetValue()
		}
	}
	wantAnn := "ctr=" + request().GetContainer().GetName()
	if env != "adjusted" || adj.GetAnnotations()["wasm.example.com/guest"] != wantAnn {
		t.Errorf("%s: adjustment %v lacks WASM_GUEST=adjusted or the annotation %q", who, adj, wantAnn)
	}
}

// TestUpstreamGuestOnNrikitHost loads a guest built with upstream's glue
// into internal/wasmhost: it subscribes to what it says (the driver
// checks), logs through env.log and answers CreateContainer exactly as
// the guest built with nrikit's stub/wasmguest does.
func TestUpstreamGuestOnNrikitHost(t *testing.T) {
	theirs, log := viaHost(t, "upstreamguest")
	if !strings.Contains(log, "upstreamguest configured by interop") {
		t.Errorf("the upstream guest's env.log message is not in the host's log:\n%s", log)
	}
	wantAdjusted(t, "upstream guest on nrikit's host", theirs.GetAdjust())
	ours, _ := viaHost(t, "nrikitguest")
	lifecycle.ExpectEqual(t, "CreateContainer response on nrikit's host, upstream guest (want) vs nrikit guest (got)", theirs, ours)
}

// TestNrikitGuestOnUpstreamRuntime runs a guest built with
// stub/wasmguest on upstream's runtime: the merged response equals the
// one of a guest built with upstream's glue on the same runtime.
func TestNrikitGuestOnUpstreamRuntime(t *testing.T) {
	ours, _ := viaUpstream(t, "nrikitguest")
	wantAdjusted(t, "nrikit guest on upstream's runtime", ours.GetAdjust())
	theirs, _ := viaUpstream(t, "upstreamguest")
	lifecycle.ExpectEqual(t, "CreateContainer response on upstream's runtime, upstream guest (want) vs nrikit guest (got)", theirs, ours)
}

// TestUpstreamGuestPassesCheckPlugin runs `nri check plugin`
// (conformance.CheckPlugin, in the driver) on the guest built with
// upstream's glue, whose Synchronize answers every part with more=false,
// as upstream's WASM plugins (its example among them) do: upstream's
// runtime never splits Synchronize for a WASM plugin, so that is
// reported, not failed, and every check passes.
func TestUpstreamGuestPassesCheckPlugin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, build(t, "driver"), "-mode", "check", "-wasm", build(t, "upstreamguest"),
		"-cache", filepath.Join(workDir, "cache"), "-out", out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver: %v\n%s", err, log.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep conformance.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Results) == 0 {
		t.Fatalf("checks failed:\n%s", log.String())
	}
	if res, _ := rep.Result(conformance.CheckSyncChunked); !res.Informational || !strings.Contains(res.Reason, "more=false") {
		t.Errorf("%s: %+v, want it reported as not handling split requests\n%s", conformance.CheckSyncChunked, res, log.String())
	}
}
