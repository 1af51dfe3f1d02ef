package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/cmd/nri/internal/report"
)

// script writes an executable shell script named name with body.
func script(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunPluginThatNeverRegisters adds a program that exits 0 at once
// (it never registers): the summary, "ok" and the exit status agree that
// the run failed.
func TestRunPluginThatNeverRegisters(t *testing.T) {
	plugin := script(t, "50-true", "exit 0")
	r := nri(t, "run", "--plugin", plugin)
	if r.code != exitPlugins {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, exitPlugins, r.stderr)
	}
	if strings.Contains(r.stdout, "every outcome as expected") || !strings.Contains(r.stdout, "FAILED") ||
		!strings.Contains(r.stdout, "plugin 50-true did not register") {
		t.Errorf("the summary does not say the run failed:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "FAILED 1 plugin did not register") || strings.Contains(r.stdout, "steps did not go as expected") {
		t.Errorf("the summary counts the plugin as a failed step:\n%s", r.stdout)
	}
	r = nri(t, "run", "--plugin", plugin, "--output", "json")
	rep := decode(t, r.stdout)
	if r.code != exitPlugins || rep.OK || len(rep.RegistrationErrors) != 1 {
		t.Errorf("exit %d, ok %v, registration errors %+v", r.code, rep.OK, rep.RegistrationErrors)
	}
}

// TestExitCodesDocumented checks that --help lists every exit code.
func TestExitCodesDocumented(t *testing.T) {
	r := nri(t, "--help")
	_, list, ok := strings.Cut(r.stdout, "Exit codes:")
	if !ok {
		t.Fatalf("--help has no exit codes:\n%s", r.stdout)
	}
	documented := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\d+)\s`).FindAllStringSubmatch(list, -1) {
		n, _ := strconv.Atoi(m[1])
		documented[n] = true
	}
	for _, code := range []int{exitOK, exitSteps, exitUsage, exitScenario, exitPlugins, exitFailure, exitChecks, exitInterrupted, exitBrokenPipe} {
		if !documented[code] {
			t.Errorf("exit code %d is not in --help:\n%s", code, list)
		}
	}
}

// TestUsageExitCodes: commands missing what they need are usage errors.
func TestUsageExitCodes(t *testing.T) {
	for _, args := range [][]string{
		{"plugin"}, {"check", "plugin"}, {"check", "plugin", "--output", "xml", "--", "true"},
		{"check", "runtime"}, {"--log-format", "xml", "run"},
	} {
		r := nri(t, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "nri: ") {
			t.Errorf("nri %v: exit %d, stderr %q; want %d", args, r.code, r.stderr, exitUsage)
		}
	}
	if r := nri(t, "plugin", "--help"); r.code != 0 {
		t.Errorf("nri plugin --help: exit %d", r.code)
	}
}

// TestRunTimeout: the error names --timeout, and a plugin that never
// registers does not hold the run up much beyond it.
func TestRunTimeout(t *testing.T) {
	r := nri(t, "run", "--timeout", "1ms")
	if r.code == 0 || !strings.Contains(r.stderr, "--timeout 1ms") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	const timeout = 2 * time.Second
	// Slack: stopping the runtime gives the hanging process the runtime
	// library's termination grace (2 s) to exit, then SIGTERM.
	slack := scaled(8 * time.Second)
	hang := script(t, "50-hang", "exec sleep 60")
	start := time.Now()
	r = nri(t, "run", "--timeout", timeout.String(), "--plugin", hang)
	took := time.Since(start)
	if r.code == 0 || !strings.Contains(r.stderr, "--timeout "+timeout.String()) {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if took > timeout+slack {
		t.Errorf("nri run --timeout %v took %v", timeout, took)
	}
}

// TestRunClosedOutput runs `nri run` with its output's reader gone (as in
// nri run | head -1): it exits as a process ended by SIGPIPE would, and
// removes its work directory and stops its plugins first.
func TestRunClosedOutput(t *testing.T) {
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(60*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, nriBinary, "run")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "NO_COLOR=1")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first write
	cmd.Stdout = w
	err = cmd.Run()
	w.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitBrokenPipe {
		t.Errorf("nri run with a closed output: %v, want exit %d", err, exitBrokenPipe)
	}
	left, err := filepath.Glob(filepath.Join(tmp, "nri-simulator-*"))
	if err != nil || len(left) > 0 {
		t.Errorf("left behind: %v (%v)", left, err)
	}
}

// TestLogFormats runs the default scenario with --log-level info in both
// formats: every line has a time; the plugins' lines are their own, with
// a plugin attribute, not quoted inside a runtime line.
func TestLogFormats(t *testing.T) {
	r := nri(t, "run", "--log-level", "info")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	forwarded := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("text line without a time: %q", line)
		}
		if strings.Contains(line, `msg="time=`) || strings.Contains(line, `msg=\"`) {
			t.Errorf("plugin line logged inside a runtime line: %q", line)
		}
		if strings.Contains(line, `msg="created plugin stub"`) && strings.Contains(line, "plugin=10-logger") {
			forwarded++
		}
	}
	if forwarded == 0 {
		t.Errorf("no line of the logger plugin, with plugin=10-logger:\n%s", r.stderr)
	}

	r = nri(t, "--log-format", "json", "run", "--log-level", "info")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	forwarded = 0
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		ts, _ := rec["time"].(string)
		msg, _ := rec["msg"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || rec["level"] == nil || msg == "" {
			t.Errorf("line without time, level or msg: %q", line)
		}
		if strings.HasPrefix(msg, "time=") {
			t.Errorf("plugin line logged inside a runtime line: %q", line)
		}
		if rec["msg"] == "created plugin stub" && rec["plugin"] == "10-logger" {
			forwarded++
		}
	}
	if forwarded == 0 {
		t.Errorf("no line of the logger plugin, with plugin 10-logger:\n%s", r.stderr)
	}
}

// TestDebugLogsPluginCalls: --log-level debug adds the runtime library's
// line for every plugin call, which info leaves out.
func TestDebugLogsPluginCalls(t *testing.T) {
	debug := nri(t, "run", "--log-level", "debug")
	info := nri(t, "run", "--log-level", "info")
	if debug.code != 0 || info.code != 0 {
		t.Fatalf("exit %d / %d\n%s", debug.code, info.code, debug.stderr)
	}
	if n := strings.Count(debug.stderr, "plugin answered"); n < 10 {
		t.Errorf("--log-level debug logged %d plugin calls:\n%s", n, debug.stderr)
	}
	if strings.Contains(info.stderr, "plugin answered") {
		t.Errorf("--log-level info logs every plugin call")
	}
}

// TestExitCodeTable drives every exit status of the nri command and checks
// that docs/cli.md's table lists exactly those.
func TestExitCodeTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const steps = "name: t\npods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n"
	wrongExpectation := write("wrong.yaml", steps+"  - createContainer: c\n    expectError: something\n", 0o644)
	invalid := write("invalid.yaml", steps+"  - frobnicate: c\n", 0o644)
	notSocket := write("not-a-socket", "", 0o644)
	quits := write("quits", "#!/bin/sh\necho bye >&2\nexit 1\n", 0o755)

	driven := map[int]string{}
	expect := func(code int, what string, r runResult) {
		t.Helper()
		if r.code != code {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
		}
		driven[code] = what
	}
	expect(exitOK, "nri run", nri(t, "run"))
	expect(exitSteps, "a step with an unmet expectError", nri(t, "run", wrongExpectation))
	expect(exitUsage, "an unknown flag", nri(t, "run", "--frobnicate"))
	expect(exitScenario, "an invalid scenario", nri(t, "run", invalid))
	expect(exitPlugins, "a plugin that does not register", nri(t, "run", "--plugin", script(t, "50-true", "exit 0")))
	expect(exitFailure, "a socket path that is a file", nri(t, "serve", "--socket", notSocket, "--wait-plugins", "0"))
	expect(exitChecks, "a plugin failing its checks", nri(t, "check", "plugin", "--", quits))

	// 130: nri serve waiting for a plugin, interrupted.
	serve, _, _ := startServe(t, "--socket", filepath.Join(shortSocketDir(t), "nri.sock"), "--wait-plugins", "1", "--timeout", "60s")
	_ = serve.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, serve, "nri serve"); code != exitInterrupted {
		t.Errorf("interrupted nri serve: exit %d, want %d", code, exitInterrupted)
	}
	driven[exitInterrupted] = "interrupted"
	// 141: TestRunClosedOutput drives it.
	driven[exitBrokenPipe] = "the output's reader gone"

	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "## Exit codes")
	table, _, _ = strings.Cut(table, "\n## ")
	documented := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1) {
		n, _ := strconv.Atoi(m[1])
		documented[n] = true
		if _, ok := driven[n]; !ok {
			t.Errorf("docs/cli.md documents exit code %d, which no part of this test drives", n)
		}
	}
	for code, what := range driven {
		if !documented[code] {
			t.Errorf("exit code %d (%s) is not in docs/cli.md's table", code, what)
		}
	}
}

// TestDescribeBuild checks nri --version's words with and without the
// commit the build recorded (go run and -buildvcs=false record none).
func TestDescribeBuild(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	if got, want := describeBuild(info), "(devel), commit unknown (built without version control information: go run, or go build -buildvcs=false), go1.26.8"; got != want {
		t.Errorf("without VCS information: %q, want %q", got, want)
	}
	info.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "9654983abcdef0123456789"}, {Key: "vcs.time", Value: "2026-12-07T04:00:00Z"},
		{Key: "vcs.modified", Value: "true"}}
	if got, want := describeBuild(info), "(devel), commit 9654983abcdef0123456789 of 2026-12-07T04:00:00Z, with uncommitted changes, go1.26.8"; got != want {
		t.Errorf("with VCS information: %q, want %q", got, want)
	}
}

// TestOneExitCodePerMistake: a file named on the command line that does
// not exist is a usage error whichever flag or argument names it, and a
// policy file with mistakes is an invalid file whichever command reads
// it.
func TestOneExitCodePerMistake(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("grants:\n  - plugins: [x]\n    adjust: {evn: [A]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", missing}, exitUsage, "scenario file " + missing + ": no such file"},
		{[]string{"run", "--policy", missing}, exitUsage, "invalid --policy " + missing + ": no such file"},
		{[]string{"run", "--plugin-dir", missing}, exitUsage, "no such directory"},
		{[]string{"serve", "--socket", filepath.Join(dir, "s"), "--scenario", missing}, exitUsage, "scenario file " + missing + ": no such file"},
		{[]string{"check", "policy", missing}, exitUsage, "policy file " + missing + ": no such file"},
		{[]string{"check", "plugin", "--policy", missing, "--", "true"}, exitUsage, "invalid --policy " + missing},
		{[]string{"check", "plugin", "--config-file", missing, "--", "true"}, exitUsage, "invalid --config-file " + missing + ": no such file"},
		{[]string{"run", "--policy", bad}, exitScenario, bad + `:3: unknown key "evn"`},
		{[]string{"check", "policy", bad}, exitScenario, "invalid policy file " + bad},
		{[]string{"check", "plugin", "--policy", bad, "--", "true"}, exitScenario, bad + `:3: unknown key "evn"`},
	} {
		r := nri(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr+r.stdout, tc.want) {
			t.Errorf("nri %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), r.code, tc.code, tc.want, r.stdout, r.stderr)
		}
	}
}

// TestResultExitCodes: a run with a plugin lost is exit status 4, as one
// with a plugin that did not register, before the steps' 1; a refusal a
// step did not expect is a step's failure, 1.
func TestResultExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    report.Report
		code int
	}{
		{"ok", report.Report{OK: true}, exitOK},
		{"refused", report.Report{Failures: []string{"step 3 (createContainer c): the runtime refused 50-x's answer"}}, exitSteps},
		{"lost", report.Report{Failures: []string{"step 3: x", "plugin 60-hang was lost"}, Lost: []report.Lost{{Plugin: "60-hang"}}}, exitPlugins},
		{"not registered", report.Report{Failures: []string{"plugin 60-x did not register"}, RegistrationErrors: []report.RegistrationError{{Plugin: "60-x"}}}, exitPlugins},
	} {
		var ce *codedError
		err := result(&tc.r)
		code := exitOK
		if errors.As(err, &ce) {
			code = ce.code
		}
		if code != tc.code {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, code, err, tc.code)
		}
	}
}
