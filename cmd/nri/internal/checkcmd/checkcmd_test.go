package checkcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/fakeruntime"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
	"github.com/spf13/cobra"
)

// helperEnv makes the re-executed test binary a plugin process.
const helperEnv = "CHECKCMD_HELPER"

// TestHelperProcess is not a test: it is the plugin the command checks,
// in the mode its arguments name (runtimetest.HelperMain): "good" serves
// plugin, "exit" exits without registering.
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{
		"good": func([]string) error {
			s, err := stub.New(plugin{})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = s.Run(ctx)
			return nil
		},
		"exit": func([]string) error {
			os.Exit(4)
			return nil
		},
	}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("helper process for the command tests")
	}
}

type plugin struct{}

func (plugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "CMD", Value: "ok"}}}, nil, nil
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Setenv(helperEnv, "1")
	cmd := New()
	var out, stderr bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return out.String(), err
}

// helper is the end of the command line that checks the test binary as
// a plugin in mode.
func helper(mode string) []string {
	return append([]string{"--", os.Args[0]}, runtimetest.HelperArgs(mode)...)
}

func TestCheckPluginCommandPasses(t *testing.T) {
	out, err := run(t, append([]string{"plugin", "--name", "20-cmd"}, helper("good")...)...)
	if err != nil {
		t.Fatalf("check plugin: %v\n%s", err, out)
	}
	if !strings.Contains(out, "result: PASS") || !strings.Contains(out, "answers CreateContainer") {
		t.Errorf("output lacks the passing report:\n%s", out)
	}
}

func TestCheckPluginCommandJSONAndFailure(t *testing.T) {
	out, err := run(t, append([]string{"plugin", "--output", "json", "--timeout", "2s"}, helper("exit")...)...)
	if !errors.Is(err, ErrChecksFailed) {
		t.Fatalf("err = %v, want ErrChecksFailed\n%s", err, out)
	}
	var report struct {
		Failed  bool `json:"failed"`
		Results []struct {
			Name   string `json:"name"`
			Passed bool   `json:"passed"`
			Reason string `json:"reason"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if !report.Failed || len(report.Results) == 0 || report.Results[0].Passed || !strings.Contains(report.Results[0].Reason, "exited with status 4") {
		t.Errorf("report = %+v, want a failed registration naming the exit status", report)
	}
}

func TestCheckCommandUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no command":      {"plugin"},
		"both modes":      {"plugin", "--socket", "/tmp/x.sock", "--", "true"},
		"bad output":      {"plugin", "--output", "xml", "--", "true"},
		"runtime no sock": {"runtime"},
		"runtime args":    {"runtime", "--socket", "/tmp/x", "extra"},
	} {
		_, err := run(t, args...)
		var usage *UsageError
		if name == "runtime args" {
			if err == nil || errors.Is(err, ErrChecksFailed) {
				t.Errorf("%s: err = %v, want cobra's usage error", name, err)
			}
		} else if !errors.As(err, &usage) {
			t.Errorf("%s: err = %v, want a UsageError", name, err)
		}
	}
}

// TestCheckPluginExamples parses every example of `check plugin --help`:
// no flag of the command may land in the plugin's command line.
func TestCheckPluginExamples(t *testing.T) {
	var plugin *cobra.Command
	for _, c := range New().Commands() {
		if c.Name() == "plugin" {
			plugin = c
		}
	}
	if plugin == nil {
		t.Fatal("no plugin command")
	}
	n := 0
	for _, line := range strings.Split(plugin.Example, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "nri" || fields[1] != "check" || fields[2] != "plugin" {
			continue
		}
		n++
		cmd := newPluginCmd()
		if err := cmd.ParseFlags(fields[3:]); err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		for _, a := range cmd.Flags().Args() {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "--") && cmd.Flags().Lookup(name) != nil {
				t.Errorf("%s: %s goes to the plugin, not to nri check", line, a)
			}
		}
	}
	if n < 3 {
		t.Errorf("%d examples parsed:\n%s", n, plugin.Example)
	}
}

// TestCheckPluginWarnsAboutMisplacedFlags: a flag of nri check after
// COMMAND goes to the plugin, with a note on stderr.
func TestCheckPluginWarnsAboutMisplacedFlags(t *testing.T) {
	t.Setenv(helperEnv, "1")
	cmd := New()
	var out, stderr bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	// The test binary refuses --verbose: only the note matters here.
	cmd.SetArgs([]string{"plugin", "--name", "20-cmd", os.Args[0], "--verbose"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = cmd.ExecuteContext(ctx)
	if !strings.Contains(stderr.String(), "--verbose comes after COMMAND, so it is passed to the plugin") {
		t.Errorf("no note about --verbose; stderr:\n%s", stderr.String())
	}
}

func TestCheckRuntimeCommandUnreachable(t *testing.T) {
	_, err := run(t, "runtime", "--socket", t.TempDir()+"/none.sock")
	if err == nil || errors.Is(err, ErrChecksFailed) || !strings.Contains(err.Error(), "none.sock") {
		t.Fatalf("err = %v, want a connection error naming the socket", err)
	}
}

// TestCheckRuntimeCommandContainerdLike: against a runtime that refuses
// unknown event bits as containerd does (closing the connection after
// Configure, without a reason), the command succeeds (nri exits 0) and
// reports how the runtime refused them as informational, in text and JSON.
func TestCheckRuntimeCommandContainerdLike(t *testing.T) {
	sock := fakeruntime.Start(t, fakeruntime.Containerd)
	out, err := run(t, "runtime", "--socket", sock, "--timeout", "5s")
	if err != nil {
		t.Fatalf("check runtime: %v\n%s", err, out)
	}
	for _, want := range []string{
		"PASS  refuses unknown event bits",
		"INFO  gives the reason for refusing unknown event bits",
		"closed the connection after Configure without a reason (containerd does this)",
		"result: PASS (5 checks, 2 informational)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = run(t, "runtime", "--socket", sock, "--timeout", "5s", "--output", "json")
	if err != nil {
		t.Fatalf("check runtime --output json: %v\n%s", err, out)
	}
	var report struct {
		Failed  bool `json:"failed"`
		Results []struct {
			Name          string `json:"name"`
			Passed        bool   `json:"passed"`
			Informational bool   `json:"informational"`
			Reason        string `json:"reason"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	found := false
	for _, res := range report.Results {
		if res.Name == "gives the reason for refusing unknown event bits" {
			found = res.Passed && res.Informational && strings.Contains(res.Reason, "containerd does this")
		}
	}
	if report.Failed || !found {
		t.Errorf("JSON report failed=%t, informational refusal reported=%t:\n%s", report.Failed, found, out)
	}
}
