package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/record"
)

// The documented command lines of nri record and nri replay (docs/cli.md,
// their --help, cmd/nri/examples/gpu-node.yaml), run by
// TestDocumentedCommandLines as docLineCases.
func init() { maps.Copy(docLineCases, recordDocLines) }

// gpuNodeConfig is gpu-env's configuration in the gpu-node example, and
// the changed one of ./50-gpu-env-next.
const (
	gpuNodeConfig = "namespaces: [ml]\nvisibleDevices: [\"[0-3]\"]\n"
	gpuNodeNext   = gpuNodeConfig + "env: {NVIDIA_VISIBLE_DEVICES: void, NVIDIA_DRIVER_CAPABILITIES: all}\n"
)

// docRecordDir stands for /var/lib/nri-record in the documented lines.
const docRecordDir = "/var/lib/nri-record/"

// gpuEnvLauncher writes an executable path that runs this nri's gpu-env
// with the configuration config.
func gpuEnvLauncher(t *testing.T, path, config string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not beside it: a plugin directory holds plugins only.
	conf := filepath.Join(t.TempDir(), "gpu-env.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %s plugin gpu-env -config %s\n", nriBinary, conf)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// recordGPUNode records the gpu-node example into path, as the
// documented nri run line does, from the environment's directory.
func recordGPUNode(t *testing.T, e *docEnv, path string) {
	t.Helper()
	examples := filepath.Join(e.dir, "cmd", "nri", "examples")
	for _, f := range []string{"gpu-node.yaml", filepath.Join("record", "record.yaml")} {
		data, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "nri", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(examples, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(examples, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	run := e.start(t, e.dir, []string{nriBinary, "run", "cmd/nri/examples/gpu-node.yaml", "--record", path,
		"--record-config", "cmd/nri/examples/record/record.yaml"})
	run.expect(t, "nri run --record", 0)
}

// onRecordDir replaces /var/lib/nri-record/ in argv by a directory of the
// environment's.
func onRecordDir(e *docEnv, argv []string) []string {
	for i, a := range argv {
		argv[i] = strings.Replace(a, docRecordDir, filepath.Join(e.dir, "nri-record")+"/", 1)
	}
	return argv
}

var recordDocLines = map[string]docCase{
	"nri run cmd/nri/examples/gpu-node.yaml --record run.nrirec --record-config cmd/nri/examples/record/record.yaml": func(t *testing.T, e *docEnv, argv []string) {
		recordGPUNode(t, e, filepath.Join(e.dir, "run.nrirec"))
		rec, err := record.Load(filepath.Join(e.dir, "run.nrirec"))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Header.GetSource() != record.SourceRuntime || !rec.Header.GetRedaction().GetEnabled() {
			t.Errorf("header %v", rec.Header)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "run.nrirec"+record.KeySuffix)); err != nil {
			t.Errorf("no key beside the recording: %v", err)
		}
	},
	"nri replay run.nrirec --plugin ./50-gpu-env": func(t *testing.T, e *docEnv, argv []string) {
		recordGPUNode(t, e, filepath.Join(e.dir, "run.nrirec"))
		gpuEnvLauncher(t, filepath.Join(e.dir, "50-gpu-env"), gpuNodeConfig)
		p := e.start(t, e.dir, argv)
		p.expect(t, "nri replay with gpu-env as it was", 0)
		if out := p.stdout.String(); !strings.Contains(out, "no container would differ") || !strings.Contains(out, "2 container(s) created") {
			t.Errorf("stdout:\n%s", out)
		}
	},
	"nri replay run.nrirec --plugin ./50-gpu-env-next --output json": func(t *testing.T, e *docEnv, argv []string) {
		recordGPUNode(t, e, filepath.Join(e.dir, "run.nrirec"))
		gpuEnvLauncher(t, filepath.Join(e.dir, "50-gpu-env-next"), gpuNodeNext)
		p := e.start(t, e.dir, argv)
		p.expect(t, "nri replay with another configuration", 1)
		var rep struct {
			Summary struct {
				Differ  int `json:"differ"`
				ByField []struct {
					Name string `json:"name"`
				} `json:"byField"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(p.stdout.String()), &rep); err != nil || rep.Summary.Differ != 2 ||
			len(rep.Summary.ByField) != 1 || rep.Summary.ByField[0].Name != "env[NVIDIA_DRIVER_CAPABILITIES]" {
			t.Errorf("%v; stdout:\n%s", err, p.stdout.String())
		}
	},
	"nri record -socket /var/run/nri/nri.sock -out /var/lib/nri-record/node.nrirec": func(t *testing.T, e *docEnv, argv []string) {
		argv = onRecordDir(e, argv)
		if err := os.MkdirAll(filepath.Join(e.dir, "nri-record"), 0o700); err != nil {
			t.Fatal(err)
		}
		socket := socketOf(t, argv)
		serve := e.start(t, e.dir, []string{nriBinary, "serve", "--socket", socket, "--wait-plugins", "1", "--timeout", "60s"})
		waitSocket(t, socket)
		recorder := e.start(t, e.dir, argv)
		serve.expect(t, "nri serve", 0)
		recorder.expect(t, "the recorder", 0)
		rec, err := record.Load(filepath.Join(e.dir, "nri-record", "node.nrirec"))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Header.GetSource() != record.SourcePlugin || len(rec.Entries) == 0 {
			t.Errorf("header %v, %d records", rec.Header, len(rec.Entries))
		}
	},
	"nri replay /var/lib/nri-record/node.nrirec --plugin-dir ./next --base-plugin-dir ./current": func(t *testing.T, e *docEnv, argv []string) {
		argv = onRecordDir(e, argv)
		recordGPUNode(t, e, filepath.Join(e.dir, "nri-record", "node.nrirec"))
		gpuEnvLauncher(t, filepath.Join(e.dir, "current", "50-gpu-env"), gpuNodeConfig)
		gpuEnvLauncher(t, filepath.Join(e.dir, "next", "50-gpu-env"), gpuNodeNext)
		p := e.start(t, e.dir, argv)
		p.expect(t, "nri replay against the base set", 1)
		if out := p.stdout.String(); !strings.Contains(out, "against the base plugin set") ||
			!strings.Contains(out, "2 of 2 container(s) would differ") || !strings.Contains(out, "env[NVIDIA_DRIVER_CAPABILITIES]") {
			t.Errorf("stdout:\n%s", out)
		}
	},
}
