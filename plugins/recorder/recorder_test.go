package recorder

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
	"github.com/nrikit/nrikit/stub/stubtest"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The test binary is also the recorder, as a runtime launches it (a
// socket as file descriptor 3), when childEnv is set; fsizeEnv limits the
// size of the files it writes (RLIMIT_FSIZE: a full disk, as the writer
// sees one).
const (
	childEnv = "NRIKIT_RECORDER_TEST_CHILD"
	fsizeEnv = "NRIKIT_RECORDER_TEST_FSIZE"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	if n, err := strconv.ParseUint(os.Getenv(fsizeEnv), 10, 64); err == nil {
		lim := &syscall.Rlimit{Cur: n, Max: n}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, lim); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(3)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Main(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// child is the recorder running as a process against a fake runtime.
type child struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	p      *stubtest.Plugin
}

// startChild starts the recorder with args against rt, as a runtime
// launches a plugin, with env added, and waits for it to register.
func startChild(t *testing.T, rt *stubtest.Runtime, args []string, env ...string) *child {
	t.Helper()
	f, err := rt.ConnectFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &child{stderr: &bytes.Buffer{}}
	c.cmd = exec.Command(os.Args[0], args...)
	c.cmd.ExtraFiles = []*os.File{f}
	c.cmd.Env = append(os.Environ(), childEnv+"=1", "NRI_PLUGIN_SOCKET=3", "NRI_PLUGIN_NAME="+Name,
		"NRI_PLUGIN_IDX="+DefaultIndex)
	c.cmd.Env = append(c.cmd.Env, env...)
	c.cmd.Stdout, c.cmd.Stderr = c.stderr, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	if c.p, err = rt.NextPlugin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.p.WaitRegistered(ctx); err != nil {
		t.Fatalf("the recorder did not register: %v\n%s", err, c.stderr)
	}
	return c
}

// stop shuts the recorder down as nrikit's runtime does, and waits for
// it to exit.
func (c *child) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	if err := c.p.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the recorder exited with %v\n%s", err, c.stderr)
		}
	case <-ctx.Done():
		t.Fatalf("the recorder did not exit after Shutdown\n%s", c.stderr)
	}
}

// snapshot is n pods with one container each, whose environments and
// annotations hold a secret.
func snapshot(n int, pad int) ([]*api.PodSandbox, []*api.Container) {
	var pods []*api.PodSandbox
	var ctrs []*api.Container
	for i := range n {
		pods = append(pods, &api.PodSandbox{Id: fmt.Sprint("pod-", i), Name: fmt.Sprint("p", i), Namespace: "ns",
			Annotations: map[string]string{"token": "hunter2", "keep.example.com/x": "clear"}})
		ctrs = append(ctrs, &api.Container{Id: fmt.Sprint("ctr-", i), PodSandboxId: fmt.Sprint("pod-", i), Name: "c",
			Env: []string{"PASSWORD=hunter2"}, Args: []string{strings.Repeat(strconv.Itoa(i), pad)}})
	}
	return pods, ctrs
}

// sendEveryEvent sends the recorder every event of the protocol (the
// Plugin service's method of each event, with its request naming pod and
// ctr) and checks that every answer is empty: no change, no rejection,
// no error. It returns the events sent, in order.
func sendEveryEvent(t *testing.T, p *stubtest.Plugin, pod *api.PodSandbox, ctr *api.Container) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	client := reflect.ValueOf(p.Client())
	var sent []string
	for e := api.Event_UNKNOWN + 1; e < api.Event_LAST; e++ {
		if !p.Events().IsSet(e) {
			continue
		}
		mt, err := record.MessageType(recordpb.Kind_REQUEST, e)
		if err != nil {
			t.Fatal(err)
		}
		req := mt.New()
		fields := req.Descriptor().Fields()
		if fd := fields.ByName("pod"); fd != nil {
			req.Set(fd, protoreflect.ValueOfMessage(proto.Clone(pod).ProtoReflect()))
		}
		if fd := fields.ByName("container"); fd != nil {
			req.Set(fd, protoreflect.ValueOfMessage(proto.Clone(ctr).ProtoReflect()))
		}
		method := client.MethodByName(e.Name())
		if !method.IsValid() {
			t.Fatalf("the Plugin service has no method %s", e.Name())
		}
		start := time.Now()
		out := method.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(req.Interface())})
		if err, _ := out[1].Interface().(error); err != nil {
			t.Errorf("%s failed: %v", e.Name(), err)
			continue
		}
		if rsp, _ := out[0].Interface().(proto.Message); proto.Size(rsp) != 0 {
			t.Errorf("%s answered %v: want nothing", e.Name(), rsp)
		}
		if took := time.Since(start); took > testscale.D(5*time.Second) {
			t.Errorf("%s took %v", e.Name(), took)
		}
		sent = append(sent, e.Name())
	}
	return sent
}

// TestRecorderProcess runs the recorder as a runtime launches it: it
// declares itself observe-only, subscribes to every event, answers each
// without a change or an error, and the recording holds the snapshot and
// every event in order, values redacted except those kept, nothing of
// the secret.
func TestRecorderProcess(t *testing.T) {
	pods, ctrs := snapshot(300, 1)
	rt := stubtest.NewRuntime(t, stubtest.WithState(pods, ctrs))
	out := filepath.Join(t.TempDir(), "node.nrirec")
	c := startChild(t, rt, []string{"-out", out, "-keep-annotation", "keep.example.com/*"}, NodeEnv+"=node-7")
	if rsp := c.p.ConfigureResponse(); !rsp.GetObserveOnly() {
		t.Errorf("Configure answered %v: want observe_only", rsp)
	}
	// Every event, but CreateContainer: validation tells the same.
	if got, want := c.p.Events(), api.AllEvents.Clear(api.Event_CREATE_CONTAINER); got != want {
		t.Errorf("subscribed to %s, want %s", got, want)
	}
	pod, ctr := snapshot(1, 1)
	sent := sendEveryEvent(t, c.p, pod[0], ctr[0])
	c.stop(t)

	rec, err := record.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if h := rec.Header; h.GetSource() != record.SourcePlugin || h.GetNode() != "node-7" || !h.GetRedaction().GetEnabled() {
		t.Errorf("header %v", h)
	}
	var got []string
	var synced int
	for _, e := range rec.Entries {
		switch e.GetKind() {
		case recordpb.Kind_SYNCHRONIZE:
			synced += len(e.Message.(*api.SynchronizeRequest).GetContainers())
		case recordpb.Kind_REQUEST:
			got = append(got, e.GetEvent().Name())
		default:
			t.Errorf("a %v record", e.GetKind())
		}
	}
	if synced != len(ctrs) || !reflect.DeepEqual(got, sent) {
		t.Errorf("recorded %d containers of the snapshot and events %v; want %d and %v", synced, got, len(ctrs), sent)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Error("the file holds the secret")
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != record.FileMode {
		t.Errorf("the recording's mode: %v, %v", info, err)
	}
}

// TestRecorderDiskFull runs the recorder with a file size limit it soon
// reaches (as a full disk): every event is still answered at once without
// a change or an error, the failure is logged, and the recorder exits
// cleanly when the runtime shuts it down.
func TestRecorderDiskFull(t *testing.T) {
	const limit = 16 << 10
	pods, ctrs := snapshot(2000, 64)
	rt := stubtest.NewRuntime(t, stubtest.WithState(pods, ctrs))
	out := filepath.Join(t.TempDir(), "node.nrirec")
	c := startChild(t, rt, []string{"-out", out, "-redact=false"}, fmt.Sprintf("%s=%d", fsizeEnv, limit))
	pod, ctr := snapshot(1, 4096)
	for range 20 {
		sendEveryEvent(t, c.p, pod[0], ctr[0])
	}
	c.stop(t)
	if info, err := os.Stat(out); err != nil || info.Size() > limit {
		t.Errorf("the recording: %v, %v; want at most %d bytes", info, err, limit)
	}
	if !strings.Contains(c.stderr.String(), "recording failed") || !strings.Contains(c.stderr.String(), "file too large") {
		t.Errorf("the failure is not logged:\n%s", c.stderr)
	}
}

// TestConfigureFailsWithoutItsDirectory checks that a recorder whose
// recording's directory is missing refuses its configuration, with the
// reason, rather than register and record nothing.
func TestConfigureFailsWithoutItsDirectory(t *testing.T) {
	p, err := New(record.Config{Path: filepath.Join(t.TempDir(), "missing", "node.nrirec")}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Recorder.Close(context.Background())
	if _, err := p.Configure(context.Background(), "", "rt", "1"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Configure: %v, want the missing directory", err)
	}
}

// TestRecorderSubscription checks the recorder's subscription: every
// event but CreateContainer on a runtime known to deliver validation,
// which tells the same (one delivery a creation rather than two), and
// every event on one that does not (NRI before v0.10).
func TestRecorderSubscription(t *testing.T) {
	for _, c := range []struct {
		nri  string
		want api.EventMask
	}{
		{api.NRIVersion, api.AllEvents.Clear(api.Event_CREATE_CONTAINER)},
		{"v0.9.0", api.MustParseEventMask("RunPodSandbox,StopPodSandbox,RemovePodSandbox,CreateContainer,PostCreateContainer," +
			"StartContainer,PostStartContainer,UpdateContainer,PostUpdateContainer,StopContainer,RemoveContainer")},
	} {
		rt := stubtest.NewRuntime(t, stubtest.WithNRIVersion(c.nri))
		p, err := New(record.Config{Path: filepath.Join(t.TempDir(), "node.nrirec")}, discard())
		if err != nil {
			t.Fatal(err)
		}
		_, sp := rt.StartPlugin(t, p)
		if got := sp.Events(); got != c.want {
			t.Errorf("NRI %s: subscribed to %s, want %s", c.nri, got, c.want)
		}
		p.Recorder.Close(context.Background())
	}
}
