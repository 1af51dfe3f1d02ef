package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestParseLogLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
		msg  string
		n    int
	}{
		{`time=2026-12-03T11:03:37.755Z level=INFO msg="created plugin stub" handles=A,B plugin=05-differ`, true, "created plugin stub", 5},
		{`time=2026-12-03T11:03:37.755Z level=WARN msg=Configure note="a \"quoted\" = value" empty=""`, true, "Configure", 5},
		{`{"time":"2026-12-03T11:03:37.755Z","level":"INFO","msg":"hello","n":3,"obj":{"a":1}}`, true, "hello", 5},
		{`{"level":"INFO","msg":"no time"}`, true, "no time", 3},
		{`broken`, false, "", 0},
		{`time=x level=INFO noMessage=1`, false, "", 0},
		{`time=x msg="unterminated`, false, "", 0},
		{`{"msg": 1`, false, "", 0},
		{`panic: runtime error: index out of range`, false, "", 0},
	} {
		fs, ok := parseLogLine(tc.line)
		msg, _ := fs.get("msg")
		if ok != tc.ok || msg != tc.msg || len(fs) != tc.n {
			t.Errorf("parseLogLine(%q) = %v (%d fields), %v; want msg %q, %d fields, %v", tc.line, fs, len(fs), ok, tc.msg, tc.n, tc.ok)
		}
	}
	fs, _ := parseLogLine(`time=t level=INFO msg=m note="a \"quoted\" = value"`)
	if v, _ := fs.get("note"); v != `a "quoted" = value` {
		t.Errorf("note = %q", v)
	}
	if got := fs.text(); got != `time=t level=INFO msg=m note="a \"quoted\" = value"` {
		t.Errorf("text() = %s", got)
	}
}

// forwardedLine logs a plugin's output line as the runtime library does.
func forwardedLine(log *slog.Logger, line string) {
	log.With("component", "runtime").Info(line, "plugin", "10-logger", "stream", "stderr")
}

func TestPluginLinesText(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newLogHandler(&buf, logFormatText, slog.LevelWarn))
	forwardedLine(log, `time=2026-12-03T11:03:37.755Z level=INFO msg="created plugin stub" plugin=10-logger`)
	forwardedLine(log, `time=2026-12-03T11:03:37.756Z level=WARN msg="odd request" pod=web`)
	forwardedLine(log, `plain output`) // INFO, below the level
	log.Info("runtime info")           // below the level
	log.Warn("runtime warning", "component", "runtime")
	want := "time=2026-12-03T11:03:37.756Z level=WARN msg=\"odd request\" pod=web plugin=10-logger\n"
	lines := strings.SplitAfter(buf.String(), "\n")
	if len(lines) != 3 || lines[0] != want || !strings.HasPrefix(lines[1], "time=") ||
		!strings.Contains(lines[1], `level=WARN msg="runtime warning" component=runtime`) {
		t.Errorf("got:\n%s\nwant first:\n%s", buf.String(), want)
	}

	buf.Reset()
	log = slog.New(newLogHandler(&buf, logFormatText, slog.LevelInfo))
	forwardedLine(log, `plain output`)
	if !strings.HasPrefix(buf.String(), "time=") || !strings.Contains(buf.String(), "msg=\"plain output\" component=runtime plugin=10-logger stream=stderr") {
		t.Errorf("plain line: %s", buf.String())
	}
}

func TestPluginLinesJSON(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newLogHandler(&buf, logFormatJSON, slog.LevelInfo))
	forwardedLine(log, `time=2026-12-03T11:03:37.755Z level=INFO msg="created plugin stub" handles=A,B`)
	forwardedLine(log, `{"time":"2026-12-03T11:03:37.756Z","level":"DEBUG","msg":"hidden"}`)
	forwardedLine(log, `{"time":"2026-12-03T11:03:37.757Z","level":"INFO","msg":"json","n":3,"obj":{"a":[1]}}`)
	forwardedLine(log, `plain output`)
	log.Info("runtime info", "n", 1)
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if rec["time"] == nil || rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("no time, level or msg: %q", line)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(recs), buf.String())
	}
	if recs[0]["msg"] != "created plugin stub" || recs[0]["plugin"] != "10-logger" || recs[0]["time"] != "2026-12-03T11:03:37.755Z" || recs[0]["handles"] != "A,B" {
		t.Errorf("forwarded line: %v", recs[0])
	}
	if recs[1]["msg"] != "json" || recs[1]["n"] != 3.0 || recs[1]["plugin"] != "10-logger" || recs[1]["obj"] == nil {
		t.Errorf("forwarded JSON line: %v", recs[1])
	}
	if recs[2]["msg"] != "plain output" || recs[2]["stream"] != "stderr" || recs[3]["msg"] != "runtime info" {
		t.Errorf("other lines: %v", recs[2:])
	}
}

// TestPluginLinesStackTrace checks that a plugin's log line with a value
// of several lines (a panic's stack trace) is written with that value
// below it, a line a line, instead of one quoted string of \n escapes.
func TestPluginLinesStackTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newLogHandler(&buf, logFormatText, slog.LevelWarn))
	forwardedLine(log, `time=2026-12-03T11:03:37.755Z level=ERROR msg="plugin handler panicked" panic=boom stack="goroutine 36 [running]:\nmain.(*plugin).CreateContainer()\n\t/src/plugin.go:115 +0x318\n"`)
	want := "time=2026-12-03T11:03:37.755Z level=ERROR msg=\"plugin handler panicked\" panic=boom stack=(below) plugin=10-logger\n" +
		"    stack:\n        goroutine 36 [running]:\n        main.(*plugin).CreateContainer()\n        \t/src/plugin.go:115 +0x318\n"
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestRecordStackTrace checks that a record of the runtime with a
// message of several lines (a WASM plugin's log line with a panic's stack
// trace) is written with the lines below it, with the handler's
// attributes.
func TestRecordStackTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newLogHandler(&buf, logFormatText, slog.LevelWarn)).With("component", "runtime")
	log.Error("plugin handler panicked stack=goroutine 1 [running]:\nmain.f()\n\t/src/plugin.go:115\n", "plugin", "50-x.wasm")
	out := buf.String()
	_, rest, _ := strings.Cut(out, " ")
	want := "level=ERROR msg=(below) component=runtime plugin=50-x.wasm\n" +
		"    msg:\n        plugin handler panicked stack=goroutine 1 [running]:\n        main.f()\n        \t/src/plugin.go:115\n"
	if !strings.HasPrefix(out, "time=") || rest != want {
		t.Errorf("got:\n%s\nwant after the time:\n%s", out, want)
	}
}
