package compatstub

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/stub/stubtest"

	"github.com/nrikit/nrikit/interop/internal/consumer"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// launch describes how the runtime starts a plugin: its environment
// beyond NRI_PLUGIN_SOCKET, and its arguments.
type launch struct {
	env  []string
	args []string
}

// outcome is what a plugin process did.
type outcome struct {
	lines []string // its report lines, in order
	code  int      // its exit code
}

// has says whether the plugin reported a line starting with prefix.
func (o outcome) has(prefix string) bool { return o.index(prefix) >= 0 }

// index is the position of the first line starting with prefix, or -1.
func (o outcome) index(prefix string) int {
	for i, l := range o.lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// value is the rest of the first line starting with prefix.
func (o outcome) value(prefix string) string {
	if i := o.index(prefix); i >= 0 {
		return strings.TrimPrefix(o.lines[i], prefix)
	}
	return ""
}

// started is a plugin process launched on a runtime connection, as a
// runtime launches a pre-installed plugin (its end of a socket pair as
// file descriptor 3, NRI_PLUGIN_SOCKET=3).
type started struct {
	cmd    *exec.Cmd
	stdout *testbin.SyncBuffer
	stderr *testbin.SyncBuffer
	exited chan struct{}
	conn   *stubtest.Plugin // the runtime's side
}

// start launches flavour f's plugin on a new connection of rt. The
// process is killed when the test ends if it is still running.
func start(t *testing.T, rt *stubtest.Runtime, f consumer.Flavor, l launch) *started {
	t.Helper()
	file, err := rt.ConnectFile()
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	cmd := exec.Command(plugins[f], l.args...)
	cmd.Env = append([]string{api.PluginSocketEnvVar + "=3"}, l.env...)
	cmd.ExtraFiles = []*os.File{file}
	s := &started{cmd: cmd, stdout: &testbin.SyncBuffer{}, stderr: &testbin.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("%s plugin's output:\n%s%s", f, s.stdout, s.stderr)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	s.conn, err = rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// registered waits until the plugin is registered, or has exited (false).
func (s *started) registered(t *testing.T) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.conn.WaitRegistered(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			return true
		}
		select {
		case <-s.exited:
			return false
		case <-time.After(testscale.D(10 * time.Second)):
			t.Fatalf("plugin neither registered nor exited: %v", err)
		}
	case <-s.exited:
		return false
	}
	return false
}

// wait waits for the plugin process to exit and returns what it did.
func (s *started) wait(t *testing.T) outcome {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatalf("plugin did not exit within 10s")
	}
	o := outcome{code: s.cmd.ProcessState.ExitCode()}
	for _, l := range strings.Split(strings.TrimSpace(s.stdout.String()), "\n") {
		if l != "" {
			o.lines = append(o.lines, l)
		}
	}
	return o
}

// end ends the runtime's side of the connection: a Shutdown request
// first, as a runtime that stops sends, or not, as a runtime that
// crashes.
func (s *started) end(t *testing.T, shutdown bool) {
	t.Helper()
	if !shutdown {
		s.conn.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	// The plugin may exit while answering; only a late answer fails.
	if err := s.conn.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}
