package pluginproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/outputsummary"
	"github.com/nrikit/nrikit/internal/socketpair"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// helperEnv makes the test binary act as a plugin (TestHelperProcess).
const helperEnv = "PLUGINPROC_HELPER"

// TestHelperProcess is the plugin the tests start, in the mode its
// arguments name (runtimetest.HelperMain); it is skipped in a normal run.
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{
		"talk": func([]string) error {
			fmt.Println("hello from", os.Getenv(api.PluginNameEnvVar), os.Getenv(api.PluginIdxEnvVar))
			fmt.Fprintln(os.Stderr, "a warning")
			os.Exit(3)
			return nil
		},
		"socket": func([]string) error {
			conn, err := socketpair.FileConn(SocketFD)
			if err != nil {
				return err
			}
			fmt.Fprint(conn, os.Getenv(api.PluginSocketEnvVar))
			return conn.Close()
		},
		"stubborn": func([]string) error {
			signal.Ignore(syscall.SIGTERM)
			fmt.Println("ready")
			time.Sleep(time.Minute)
			return errors.New("not killed within a minute")
		},
	}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("helper process")
	}
}

func helper(t *testing.T, mode string) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Path: exe, Args: runtimetest.HelperArgs(mode),
		Env: []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0"}}
}

// lines collects output lines.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) add(stream string, line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, stream+": "+string(line))
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.got, "\n")
}

func TestOutputAndExit(t *testing.T) {
	s := helper(t, "talk")
	s.Name, s.Idx, s.External = "talker", "10", true
	var out lines
	s.Lines = out.add
	exits := make(chan string, 1)
	s.OnExit = func(_ int, err error) { exits <- Status(err) }
	p, conn, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	if conn != nil {
		t.Error("an external plugin got a connection")
	}
	p.Stop(10*time.Second, time.Second)
	if got := Status(p.Err()); got != "exit status 3" {
		t.Errorf("status %q, want exit status 3", got)
	}
	if got := <-exits; got != "exit status 3" {
		t.Errorf("OnExit got %q", got)
	}
	if d := p.Describe(); !strings.HasPrefix(d, "exited with status 3; output: ") || !strings.Contains(d, "hello from talker 10") || !strings.Contains(d, "a warning") {
		t.Errorf("Describe() = %q", d)
	}
	for _, want := range []string{"stdout: hello from talker 10", "stderr: a warning"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
}

func TestSocketPair(t *testing.T) {
	p, conn, err := Start(helper(t, "socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "3" {
		t.Errorf("the plugin read NRI_PLUGIN_SOCKET=%q, want 3", got)
	}
	p.Stop(10*time.Second, time.Second)
	if err := p.Err(); err != nil {
		t.Errorf("plugin failed: %v", err)
	}
}

// TestStopEscalates checks that a process ignoring SIGTERM is killed.
func TestStopEscalates(t *testing.T) {
	s := helper(t, "stubborn")
	s.External = true
	ready := make(chan struct{})
	var once sync.Once
	s.Lines = func(_ string, line []byte) {
		if string(line) == "ready" {
			once.Do(func() { close(ready) })
		}
	}
	var (
		mu   sync.Mutex
		sigs []syscall.Signal
	)
	s.OnSignal = func(sig syscall.Signal, _ time.Duration) {
		mu.Lock()
		sigs = append(sigs, sig)
		mu.Unlock()
	}
	p, _, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatal("helper did not start")
	}
	p.Stop(50*time.Millisecond, 200*time.Millisecond)
	if got := Status(p.Err()); got != "signal: killed" {
		t.Errorf("status %q, want signal: killed", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sigs) != 2 || sigs[0] != syscall.SIGTERM || sigs[1] != syscall.SIGKILL {
		t.Errorf("signals %v, want SIGTERM then SIGKILL", sigs)
	}
}

func TestOutputWriter(t *testing.T) {
	s := helper(t, "talk")
	s.External = true
	var b strings.Builder
	s.Output = &b
	p, _, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if !strings.Contains(b.String(), "hello from") || !strings.Contains(b.String(), "a warning") {
		t.Errorf("output %q", b.String())
	}
}

func TestStartFails(t *testing.T) {
	if _, _, err := Start(Spec{Path: "/nonexistent/plugin"}); err == nil {
		t.Error("starting a missing executable succeeded")
	}
	if _, _, err := Start(Spec{}); err == nil {
		t.Error("starting nothing succeeded")
	}
}

// TestStartErrorNamesThePathOnce: a plugin that cannot be started is
// reported with its path and the cause, once each.
func TestStartErrorNamesThePathOnce(t *testing.T) {
	_, _, err := Start(Spec{Path: "./no-such-plugin", External: true})
	if err == nil || err.Error() != "starting ./no-such-plugin: no such file or directory" {
		t.Errorf("Start error %v", err)
	}
}

// TestExitDescription: how a process ended, in words.
func TestExitDescription(t *testing.T) {
	for _, c := range []struct {
		script string
		want   string
	}{
		{"exit 0", "exited with status 0"},
		{"exit 7", "exited with status 7"},
		{"kill -9 $$", "was ended by a signal (killed)"},
	} {
		err := exec.Command("/bin/sh", "-c", c.script).Run()
		if got := ExitDescription(err); got != c.want {
			t.Errorf("%s: %q, want %q", c.script, got, c.want)
		}
	}
}

// TestReadLines: a plugin's output reaches Lines line by line without
// its line ends ("\n", "\r\n"), a line longer than maxLine in pieces that
// put together are the line, the last line without a newline too; the
// kept output has the same lines (outputsummary renders them joined by
// " | ").
func TestReadLines(t *testing.T) {
	long := strings.Repeat("0123456789", 20<<10) // 200 KiB, no newline inside
	out := "first\nwindows\r\n\n" + long + "\nlast without newline"
	var got []string
	p := &Process{spec: Spec{Lines: func(stream string, line []byte) {
		if stream != "stderr" {
			t.Errorf("stream %q, want stderr", stream)
		}
		got = append(got, string(line))
	}}, kept: outputsummary.New(1<<20, nil)}
	p.read(strings.NewReader(out), "stderr")

	if len(got) < 6 || got[0] != "first" || got[1] != "windows" || got[len(got)-1] != "last without newline" {
		t.Fatalf("lines %q (shortened), want first, windows, the long line's pieces, last", shorten(got))
	}
	pieces := got[2 : len(got)-1]
	for _, piece := range pieces {
		if len(piece) > maxLine {
			t.Errorf("a piece of %d bytes, want at most %d", len(piece), maxLine)
		}
	}
	if joined := strings.Join(pieces, ""); joined != long {
		t.Errorf("the long line's %d pieces make %d bytes, want the %d of the line", len(pieces), len(joined), len(long))
	}
	if kept := p.kept.String(); !strings.HasPrefix(kept, "first | windows | "+long[:10]) ||
		!strings.HasSuffix(kept, long[len(long)-10:]+" | last without newline") {
		t.Errorf("kept output %.60q…%q", kept, kept[max(0, len(kept)-40):])
	}
}

// shorten returns ss with each string cut to 20 bytes.
func shorten(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s[:min(len(s), 20)]
	}
	return out
}
