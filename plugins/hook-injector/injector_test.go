package hookinjector

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func writeHook(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hook(path, when string, stages ...string) string {
	return `{"version": "1.0.0", "hook": {"path": "` + path + `", "args": ["x", "-v"], "timeout": 3}, "when": ` + when +
		`, "stages": ["` + strings.Join(stages, `", "`) + `"]}`
}

// allowBin allows the executables of /bin at every stage.
const allowBin = "hooks: [{path: '/bin/*', stages: [prestart, createRuntime, createContainer, startContainer, poststart, poststop]}]\n"

func configured(t *testing.T, dirs ...string) *Plugin {
	t.Helper()
	p := New(slog.New(slog.DiscardHandler), nil)
	cfg := "hooksDirs: [" + strings.Join(dirs, ", ") + "]\n" + allowBin
	if _, err := p.Configure(context.Background(), cfg, "rt", "1"); err != nil {
		t.Fatal(err)
	}
	return p
}

func inject(t *testing.T, p *Plugin, ctr *api.Container) *api.Hooks {
	t.Helper()
	adj, _, err := p.CreateContainer(context.Background(), &api.PodSandbox{Name: "p"}, ctr)
	if err != nil {
		t.Fatal(err)
	}
	return adj.GetHooks()
}

func TestConditions(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "a-always.json", hook("/bin/always", `{"always": true}`, "prestart", "poststop"))
	writeHook(t, dir, "b-annotation.json", hook("/bin/annotated", `{"annotations": {"^gpu\\.io/hook$": "^on$"}}`, "createRuntime"))
	writeHook(t, dir, "c-command.json", hook("/bin/python-hook", `{"commands": ["python"]}`, "startContainer"))
	writeHook(t, dir, "d-bind.json", hook("/bin/bind-hook", `{"hasBindMounts": true}`, "createContainer", "poststart"))
	writeHook(t, dir, "ignored.txt", "not a hook")
	p := configured(t, dir)

	plain := inject(t, p, &api.Container{Name: "c", Args: []string{"sh"}})
	if len(plain.GetPrestart()) != 1 || len(plain.GetPoststop()) != 1 || len(plain.GetCreateRuntime()) != 0 ||
		len(plain.GetStartContainer()) != 0 || len(plain.GetCreateContainer()) != 0 {
		t.Errorf("plain container: %v", plain)
	}
	h := plain.GetPrestart()[0]
	if h.GetPath() != "/bin/always" || h.GetArgs()[1] != "-v" || h.GetTimeout().GetValue() != 3 {
		t.Errorf("hook: %v", h)
	}
	all := inject(t, p, &api.Container{
		Name:        "c",
		Args:        []string{"/usr/bin/python3", "x.py"},
		Annotations: map[string]string{"gpu.io/hook": "on"},
		Mounts:      []*api.Mount{{Destination: "/d", Source: "/s", Options: []string{"rbind"}}},
	})
	if len(all.GetCreateRuntime()) != 1 || len(all.GetStartContainer()) != 1 || len(all.GetCreateContainer()) != 1 ||
		len(all.GetPoststart()) != 1 || len(all.GetPrestart()) != 1 {
		t.Errorf("matching container: %v", all)
	}
	offValue := inject(t, p, &api.Container{Name: "c", Annotations: map[string]string{"gpu.io/hook": "off"}})
	if len(offValue.GetCreateRuntime()) != 0 {
		t.Errorf("annotation value regex did not apply: %v", offValue)
	}
}

func TestNoHooks(t *testing.T) {
	p := configured(t, filepath.Join(t.TempDir(), "missing"))
	adj, _, err := p.CreateContainer(context.Background(), &api.PodSandbox{}, &api.Container{Name: "c"})
	if adj != nil || err != nil {
		t.Errorf("got %v, %v", adj, err)
	}
}

func TestLaterDirectoryOverrides(t *testing.T) {
	base, override := t.TempDir(), t.TempDir()
	writeHook(t, base, "h.json", hook("/bin/base", `{"always": true}`, "prestart"))
	writeHook(t, override, "h.json", hook("/bin/override", `{"always": true}`, "prestart"))
	hooks := inject(t, configured(t, base, override), &api.Container{Name: "c"})
	if len(hooks.GetPrestart()) != 1 || hooks.GetPrestart()[0].GetPath() != "/bin/override" {
		t.Errorf("hooks: %v", hooks)
	}
}

func TestInvalidHooks(t *testing.T) {
	for name, tc := range map[string]struct{ content, want string }{
		"json":      {"{", "unexpected end"},
		"version":   {`{"version": "2.0.0", "hook": {"path": "/x"}, "when": {"always": true}, "stages": ["prestart"]}`, "unsupported version"},
		"path":      {hook("x", `{"always": true}`, "prestart"), "not an absolute path"},
		"stage":     {hook("/x", `{"always": true}`, "prestop"), `unknown stage "prestop"`},
		"no stages": {`{"version": "1.0.0", "hook": {"path": "/x"}, "when": {"always": true}}`, "no stages"},
		"no when":   {hook("/x", `{"always": false}`, "prestart"), "needs at least one condition"},
		"regex":     {hook("/x", `{"commands": ["("]}`, "prestart"), "when.commands"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeHook(t, dir, "bad.json", tc.content)
			_, err := New(slog.New(slog.DiscardHandler), []string{dir}).Configure(context.Background(), "", "rt", "1")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.json") {
				t.Errorf("error %v, want %q naming the file", err, tc.want)
			}
		})
	}
	if _, err := New(slog.New(slog.DiscardHandler), nil).Configure(context.Background(), "hookDirs: [x]", "rt", "1"); err == nil {
		t.Error("unknown configuration key accepted")
	}
}
