package chaos

// Plugin processes: the test binary re-executed as a plugin (see
// plugin_stub_test.go and plugin_raw_test.go), its output kept line by
// line for the tests to wait on.

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// outLine is one line a plugin process wrote.
type outLine struct {
	at     time.Time
	text   string
	stderr bool
}

// pluginProc is a plugin process: the test binary run in one of the
// modes of TestHelperProcess. Its stdout and stderr are kept line by
// line; it is killed at cleanup, and a data race it reported fails the
// test.
type pluginProc struct {
	label   string
	cmd     *exec.Cmd
	mu      sync.Mutex
	lines   []outLine
	changed chan struct{}
	done    chan struct{} // closed once it exited and its output is read
}

// startPlugin starts the test binary as a plugin in mode with args.
func startPlugin(t testing.TB, label, mode string, args ...string) *pluginProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, runtimetest.HelperArgs(mode, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1", noRaceExitDelay)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &pluginProc{label: label, cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	var readers sync.WaitGroup
	for _, s := range []struct {
		r      io.Reader
		stderr bool
	}{{stdout, false}, {stderr, true}} {
		readers.Go(func() {
			sc := bufio.NewScanner(s.r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				p.add(outLine{at: time.Now(), text: sc.Text(), stderr: s.stderr})
			}
			io.Copy(io.Discard, s.r) // a line too long: drain
		})
	}
	go func() {
		readers.Wait()
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		for _, l := range p.all() {
			if l.stderr && strings.Contains(l.text, "DATA RACE") {
				t.Errorf("plugin %s reported a data race", label)
			}
		}
		if t.Failed() {
			p.dump(t)
		}
	})
	return p
}

func (p *pluginProc) add(l outLine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, l)
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *pluginProc) all() []outLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// with returns the stdout lines starting with prefix.
func (p *pluginProc) with(prefix string) []outLine {
	var out []outLine
	for _, l := range p.all() {
		if !l.stderr && strings.HasPrefix(l.text, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// waitLine waits at most timeout for a stdout line starting with prefix.
func (p *pluginProc) waitLine(t testing.TB, prefix string, timeout time.Duration) outLine {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		if ls := p.with(prefix); len(ls) > 0 {
			return ls[0]
		}
		select {
		case <-changed:
		case <-p.done:
			if ls := p.with(prefix); len(ls) > 0 {
				return ls[0]
			}
			t.Fatalf("plugin %s exited without writing %q", p.label, prefix)
		case <-deadline.C:
			t.Fatalf("plugin %s did not write %q within %v", p.label, prefix, timeout)
		}
	}
}

func (p *pluginProc) pid() int { return p.cmd.Process.Pid }

// signal sends sig to the process.
func (p *pluginProc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid(), sig); err != nil {
		t.Fatalf("signal %v to plugin %s: %v", sig, p.label, err)
	}
}

// kill resumes the process if it was stopped, kills it and waits until it
// is reaped.
func (p *pluginProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(p.pid(), syscall.SIGCONT)
	p.cmd.Process.Kill()
	<-p.done
}

// waitExit waits at most timeout for the process to exit on its own.
func (p *pluginProc) waitExit(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("plugin %s did not exit within %v", p.label, timeout)
	}
}

func (p *pluginProc) dump(t testing.TB) {
	ls := p.all()
	t.Logf("plugin %s output (%d lines, last 60):", p.label, len(ls))
	for _, l := range ls[max(0, len(ls)-60):] {
		stream := "out"
		if l.stderr {
			stream = "err"
		}
		text := l.text
		if len(text) > 300 {
			text = text[:300] + "..."
		}
		t.Logf("  %s %s %s", l.at.Format("15:04:05.000"), stream, text)
	}
}

// startStub starts a well-behaved stub-based plugin IDX-NAME on rt's
// socket and waits until the runtime has it active.
func startStub(t testing.TB, rt *testRuntime, idx, name string, args ...string) *pluginProc {
	t.Helper()
	full := api.FullPluginName(idx, name)
	p := startPlugin(t, full, "stub", append([]string{"-socket", rt.socket, "-idx", idx, "-name", name}, args...)...)
	p.waitLine(t, "REGISTER", hangGuard)
	if l := p.with("REGISTER ok"); len(l) == 0 {
		t.Fatalf("plugin %s did not register: %s", full, p.with("REGISTER")[0].text)
	}
	rt.waitState(t, full, adaptation.StateActive, hangGuard)
	return p
}

// startRaw starts a raw plugin IDX-NAME on rt's socket.
func startRaw(t testing.TB, rt *testRuntime, idx, name string, args ...string) *pluginProc {
	t.Helper()
	return startPlugin(t, api.FullPluginName(idx, name), "raw",
		append([]string{"-socket", rt.socket, "-idx", idx, "-name", name}, args...)...)
}
