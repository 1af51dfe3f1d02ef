package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
	"github.com/nrikit/nrikit/interop/wasm/internal/syncresult"
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
// upstream's glue, whose Synchronize answers every request with
// more=false, as upstream's WASM plugins (its example among them) do:
// its module does not declare that it handles Synchronize in parts, so
// runtimes send it its snapshot whole and the checker does not send it a
// split one (the check is skipped), and every check passes.
func TestUpstreamGuestPassesCheckPlugin(t *testing.T) {
	var rep conformance.Report
	log := driveJSON(t, &rep, "-mode", "check", "-wasm", build(t, "upstreamguest"))
	if rep.Failed() || len(rep.Results) == 0 {
		t.Fatalf("checks failed:\n%s", log)
	}
	if res, _ := rep.Result(conformance.CheckSyncChunked); !res.Skipped || !strings.Contains(res.Reason, "does not export nrikit_split_synchronize") {
		t.Errorf("%s: %+v, want it skipped: the module does not declare split Synchronize\n%s", conformance.CheckSyncChunked, res, log)
	}
}

// driveJSON runs the driver with args, the shared compilation cache and
// an output file, decodes the JSON it writes there into v and returns
// the driver's log.
func driveJSON(t *testing.T, v any, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	args = append(args, "-cache", filepath.Join(workDir, "cache"), "-out", out)
	cmd := exec.CommandContext(ctx, build(t, "driver"), args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver %v: %v\n%s", args, err, log.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return log.String()
}

// syncNode runs the driver's mode sync on the guest name (nrikit's
// runtime synchronizing it with a node of over 1 MiB of pods and
// containers) with extra driver arguments, and returns its result.
func syncNode(t *testing.T, name string, args ...string) syncresult.Result {
	t.Helper()
	var res syncresult.Result
	driveJSON(t, &res, append([]string{"-mode", "sync", "-wasm", build(t, name)}, args...)...)
	t.Logf("%s: %d pods, %d containers, %d bytes: state %q, Synchronize requests %v, the guest saw %q, warnings %q",
		name, res.Pods, res.Containers, res.Bytes, res.State, res.Requests, res.GuestSaw, res.Warnings)
	return res
}

// TestUpstreamGuestGetsWholeSnapshot synchronizes a guest built on
// upstream's glue, which answers every Synchronize request without
// looking at more (as upstream's example does), on nrikit's runtime with
// a node of over 1 MiB of pods and containers: upstream's runtime sends a
// WASM plugin its snapshot in one request whatever its size, and so must
// nrikit's, or the plugin sees only the first part (and nrikit's runtime,
// finding more=false in the answer to a part that had more, drops it).
func TestUpstreamGuestGetsWholeSnapshot(t *testing.T) {
	res := syncNode(t, "upstreamguest")
	want := fmt.Sprintf("synchronize: pods=%d containers=%d more=false", res.Pods, res.Containers)
	if res.State != "active" || len(res.Requests) != 1 || res.Requests[0] != "ok" ||
		len(res.GuestSaw) != 1 || res.GuestSaw[0] != want {
		t.Errorf("state %q, Synchronize requests %v, the guest saw %q (warnings %q); want active, one request answered, the guest seeing %q",
			res.State, res.Requests, res.GuestSaw, res.Warnings, want)
	}
}

// TestNrikitGuestGetsSnapshotInParts synchronizes a guest built with
// stub/wasmguest, which declares that it handles Synchronize in parts,
// with the same node: the runtime splits the snapshot into parts of at
// most 1 MiB, and the guest's handler gets all of it once.
func TestNrikitGuestGetsSnapshotInParts(t *testing.T) {
	res := syncNode(t, "nrikitguest")
	want := fmt.Sprintf("synchronize: pods=%d containers=%d", res.Pods, res.Containers)
	parts := res.Bytes/(1<<20) + 1
	if res.State != "active" || len(res.Requests) < parts || slices.ContainsFunc(res.Requests, func(s string) bool { return s != "ok" }) ||
		len(res.GuestSaw) != 1 || res.GuestSaw[0] != want {
		t.Errorf("state %q, Synchronize requests %v, the guest saw %q (warnings %q); want active, at least %d requests answered, the handler seeing %q once",
			res.State, res.Requests, res.GuestSaw, res.Warnings, parts, want)
	}
}

// TestSnapshotTooLargeForTheGuestFailsClearly synchronizes the guest on
// upstream's glue with a memory limit of 8 MiB: a snapshot of more than
// half of it is refused before the guest sees it, saying why; a smaller
// one the guest runs out of memory decoding fails its start saying that
// it was sent whole. Neither is cut to what fits.
func TestSnapshotTooLargeForTheGuestFailsClearly(t *testing.T) {
	const limit = 8 << 20
	res := syncNode(t, "upstreamguest", "-memory", fmt.Sprint(limit), "-services", "30")
	if res.Bytes <= limit/2 {
		t.Fatalf("the snapshot is %d bytes, not more than half of %d", res.Bytes, limit)
	}
	if want := "more than half of the plugin's WASM memory limit of 8 MiB"; res.State != "" || !slices.Equal(res.Requests, []string{"oversize"}) ||
		len(res.GuestSaw) != 0 || !slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.Contains(w, want) && strings.Contains(w, "does not declare that it handles Synchronize in parts")
	}) {
		t.Errorf("state %q, Synchronize requests %v, the guest saw %q, warnings %q; want the plugin not started, its one request refused as oversize with a warning saying %q",
			res.State, res.Requests, res.GuestSaw, res.Warnings, want)
	}

	res = syncNode(t, "upstreamguest", "-memory", fmt.Sprint(limit))
	if want := fmt.Sprintf("given the snapshot whole, %d bytes in one request", res.Bytes); res.State != "" || !slices.Equal(res.Requests, []string{"crashed"}) ||
		len(res.GuestSaw) != 0 || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("state %q, Synchronize requests %v, the guest saw %q, warnings %q; want the plugin not started, crashed on its one request, with a warning saying %q",
			res.State, res.Requests, res.GuestSaw, res.Warnings, want)
	}
}
