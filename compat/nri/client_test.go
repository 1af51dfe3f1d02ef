package nri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	types "github.com/containerd/nri/types/v1"
)

type task struct{ spec *oci.Spec }

func (task) ID() string                                { return "sandbox1" }
func (task) Pid() uint32                               { return 42 }
func (t task) Spec(context.Context) (*oci.Spec, error) { return t.spec, nil }

// TestInvoke runs a v0.1 plugin (a shell script) and checks the request
// it was given and the result returned.
func TestInvoke(t *testing.T) {
	dir := t.TempDir()
	req := filepath.Join(dir, "request.json")
	script := "#!/bin/sh\n[ \"$1\" = invoke ] || exit 2\ncat > " + req + "\n" +
		`echo '{"plugin":"p","version":"0.1","metadata":{"ok":"yes"}}'` + "\n"
	plugin := filepath.Join(dir, "p")
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Client{conf: &types.ConfigList{Version: "0.1", Plugins: []*types.Plugin{{Type: plugin}}}}
	spec := &oci.Spec{Linux: &oci.Linux{CgroupsPath: "/cg", Namespaces: []oci.LinuxNamespace{{Type: oci.NetworkNamespace, Path: "/ns"}}}}
	res, err := c.InvokeWithSandbox(context.Background(), task{spec}, types.Create, &Sandbox{ID: "sandbox1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Metadata["ok"] != "yes" {
		t.Errorf("results %+v", res)
	}
	data, err := os.ReadFile(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"state":"create"`, `"id":"sandbox1"`, `"sandboxID":"sandbox1"`, `"pid":42`, `"cgroupsPath":"/cg"`, `"network":"/ns"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("request %s lacks %s", data, want)
		}
	}
	if got := c.Plugins(); len(got) != 1 || got[0] != plugin {
		t.Errorf("Plugins() = %v", got)
	}
}

// TestInvokeFailure: a plugin's error result fails the invocation, naming
// the plugin.
func TestInvokeFailure(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "bad")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\necho '{\"error\":\"refused\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Client{conf: &types.ConfigList{Plugins: []*types.Plugin{{Type: plugin}}}}
	_, err := c.Invoke(context.Background(), task{&oci.Spec{}}, types.Delete)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), plugin) {
		t.Errorf("error %v, want the plugin's refusal naming it", err)
	}
}

// TestLoadConfigMissing: no configuration file is no plugins.
func TestLoadConfigMissing(t *testing.T) {
	c, err := loadConfig(filepath.Join(t.TempDir(), "none.json"))
	if err != nil || len(c.Plugins) != 0 || c.Version != Version {
		t.Errorf("loadConfig of a missing file: %+v, %v", c, err)
	}
}
