package adaptation

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEarlyExitReason: a pre-installed plugin that quits before it
// registers is reported with its exit status and its last output, not with
// the transport's error; its plain stderr output is a warning, a log line
// of its own at info level stays informational.
func TestEarlyExitReason(t *testing.T) {
	rt := newTestRuntime(t, nil)
	script := "#!/bin/sh\necho 'time=2026-01-01T00:00:00Z level=INFO msg=starting' >&2\necho 'I quit' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(rt.dir, "60-quitter"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rt.start(t)
	rec := rt.logs.wait(t, "the registration failure", func(r logRecord) bool {
		return r.msg == "plugin registration failed"
	})
	want := regexp.MustCompile(`^plugin \(pid \d+\) exited with status 3 before registering; output: time=\S+ level=INFO msg=starting \| I quit$`)
	if !want.MatchString(rec.attrs["error"]) {
		t.Errorf("registration error %q, want one matching %s", rec.attrs["error"], want)
	}
	for line, level := range map[string]slog.Level{"I quit": slog.LevelWarn, "time=2026-01-01T00:00:00Z level=INFO msg=starting": slog.LevelInfo} {
		got := rt.logs.find(func(r logRecord) bool { return r.msg == line && r.attrs["plugin"] == "60-quitter" })
		if len(got) != 1 || got[0].level != level {
			t.Errorf("output line %q logged as %v, want once at %v", line, got, level)
		}
	}
}

// TestOutputLevel: the level of a launched plugin's output lines.
func TestOutputLevel(t *testing.T) {
	for _, c := range []struct {
		stream, line string
		want         slog.Level
	}{
		{"stdout", "panic: boom", slog.LevelInfo},
		{"stderr", "panic: boom", slog.LevelWarn},
		{"stderr", "time=x level=INFO msg=hello", slog.LevelInfo},
		{"stderr", "time=x level=debug msg=hello", slog.LevelInfo},
		{"stderr", `{"time":"x","level":"INFO","msg":"hello"}`, slog.LevelInfo},
		{"stderr", "time=x level=WARN msg=hello", slog.LevelWarn},
		{"stderr", `{"level":"error","msg":"hello"}`, slog.LevelWarn},
		{"stderr", "level=", slog.LevelWarn},
	} {
		if got := outputLevel(c.stream, []byte(c.line)); got != c.want {
			t.Errorf("outputLevel(%s, %q) = %v, want %v", c.stream, c.line, got, c.want)
		}
	}
}

// TestClosingAtOnceReason: a plugin that closes its socket as soon as it
// connects is reported as having closed its connection before registering,
// whether the runtime's multiplexer reads the close before or after it has
// opened its logical connections. The first order used to give the
// transport's error instead ("plugin connection (pid 0) failed: listening
// on connection 2: …"), and dropped a launched plugin's exit status and
// output; it is rare, so the test connects many plugins.
func TestClosingAtOnceReason(t *testing.T) {
	rt := newTestRuntime(t, nil)
	rt.start(t)
	for i := range 300 {
		rtEnd, plEnd := net.Pipe()
		plEnd.Close() // the runtime's reads see EOF at once
		err := rt.a.ServeConn(ctxT(t), rtEnd)
		var early *earlyExit
		if !errors.As(err, &early) || err.Error() != "plugin (pid 0) closed its connection before registering" {
			t.Fatalf("plugin %d: ServeConn = %v, want the plugin closed its connection before registering", i, err)
		}
	}
}

// TestGarbageAtOnceReason: a plugin that sends a frame the runtime
// refuses as soon as it connects is reported as disconnected before
// registering, with the multiplexer's reason, whether the runtime reads
// the frame before or after it has opened its logical connections (the
// first order used to give "plugin connection (pid 0) failed: …").
func TestGarbageAtOnceReason(t *testing.T) {
	rt := newTestRuntime(t, nil)
	rt.start(t)
	// A frame header for connection 7, which NRI does not use.
	garbage := []byte{0, 0, 0, 7, 0, 0, 0, 0}
	const want = "plugin (pid 0) disconnected before registering: "
	for i := range 300 {
		rtEnd, plEnd := net.Pipe()
		wrote := make(chan error, 1)
		go func() {
			_, err := plEnd.Write(garbage)
			wrote <- err
		}()
		err := rt.a.ServeConn(ctxT(t), rtEnd)
		plEnd.Close()
		if werr := <-wrote; werr != nil {
			t.Fatalf("plugin %d: writing the frame: %v", i, werr)
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "7") {
			t.Fatalf("plugin %d: ServeConn = %v, want %q and the refused connection ID 7", i, err, want+"…")
		}
	}
}
