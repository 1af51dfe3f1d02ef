//go:build !wasip1

package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// TestCreateContainerInjects runs the plugin against stubtest's fake
// runtime, in-process: copy this pattern to test your own handlers.
func TestCreateContainerInjects(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	_, p := rt.StartPlugin(t, &plugin{log: slog.New(slog.DiscardHandler)})

	// The plugin subscribed to exactly the events it has handlers for.
	want := api.MaskOf(api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_CREATE_CONTAINER,
		api.Event_START_CONTAINER, api.Event_REMOVE_CONTAINER)
	if got := p.Events(); got != want {
		t.Errorf("subscribed to %s, want %s", got, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pod := &api.PodSandbox{Id: "pod1", Name: "web", Namespace: "default"}
	ctr := &api.Container{Id: "ctr1", PodSandboxId: "pod1", Name: "nginx"}
	rsp, err := p.CreateContainer(ctx, pod, ctr)
	if err != nil {
		t.Fatal(err)
	}
	env := rsp.GetAdjust().GetEnv()
	if len(env) != 1 || env[0].GetKey() != injectedEnvName || env[0].GetValue() != injectedEnvValue {
		t.Errorf("injected env = %v", env)
	}
	if got := rsp.GetAdjust().GetAnnotations()[injectedAnnotation]; got != "true" {
		t.Errorf("injected annotation = %q", got)
	}
	if len(rsp.GetUpdate()) != 0 {
		t.Errorf("unexpected updates %v", rsp.GetUpdate())
	}
}

// TestOldRuntime checks that the plugin also registers with a runtime
// that supports fewer events (here: one that only accepts CreateContainer).
func TestOldRuntime(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithSupportedEvents(api.MaskOf(api.Event_CREATE_CONTAINER)))
	s, p := rt.StartPlugin(t, &plugin{log: slog.New(slog.DiscardHandler)})
	if got := s.Subscription(); got != api.MaskOf(api.Event_CREATE_CONTAINER) {
		t.Errorf("subscription = %s", got)
	}
	if _, err := p.RunPodSandbox(context.Background(), &api.PodSandbox{Id: "p"}); err == nil {
		t.Error("runtime delivered an event it does not support")
	}
}

// TestLogFile checks that -log-file receives the log lines, each with
// its time, including why the plugin failed (here: no runtime at the
// socket), since a runtime may have put stderr on /dev/null.
func TestLogFile(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "template.log")
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-idx", "10", "-socket", filepath.Join(dir, "none.sock"), "-log-file", logFile}, &stderr)
	if err == nil {
		t.Fatal("run succeeded without a runtime")
	}
	b, rerr := os.ReadFile(logFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !strings.Contains(string(b), `level=ERROR msg="plugin failed"`) || stderr.Len() != 0 {
		t.Errorf("log file:\n%s\nstderr:\n%s", b, stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "time=") {
			t.Errorf("line without a time: %q", l)
		}
	}
}

// TestLogsCapabilities checks the line the plugin logs about the
// capabilities the runtime told it, and the one when it told none.
func TestLogsCapabilities(t *testing.T) {
	told := capability.NewSet(capability.Env, capability.Annotations, capability.Devices)
	for _, tc := range []struct {
		name string
		opts []stubtest.Option
		want string
	}{
		{"told", []stubtest.Option{stubtest.WithCapabilities(told)},
			`level=INFO msg="runtime told capabilities" capabilities=annotations,env,linux.devices`},
		{"told none", []stubtest.Option{stubtest.WithCapabilities(capability.Set{})},
			`level=INFO msg="runtime told capabilities" capabilities=none`},
		{"not told", nil, `level=INFO msg="runtime told no capabilities (an older runtime, or upstream's)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncBuffer
			rt := stubtest.NewRuntime(t, tc.opts...)
			rt.StartPlugin(t, &plugin{log: slog.New(slog.NewTextHandler(&buf, nil))})
			if got := buf.String(); !strings.Contains(got, tc.want) {
				t.Errorf("log:\n%s\nwant a line with\n%s", got, tc.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the plugin's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
