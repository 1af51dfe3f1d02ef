package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nrikit/nrikit/e2e/harness"
)

// TestJavaScriptPlugin runs plugins/js-env, the plugin written in
// JavaScript from the specification alone, as an external plugin and as
// a pre-installed one with a configuration file.
func TestJavaScriptPlugin(t *testing.T) {
	script := filepath.Join(suite.repo, "plugins", "js-env", "plugin.js")
	if suite.node == "" {
		t.Fatal("node is not installed: the JavaScript plugin needs Node.js 20 or later")
	}
	if _, err := os.Stat(filepath.Join(suite.repo, "plugins", "js-env", "node_modules", "protobufjs")); err != nil {
		t.Fatalf("plugins/js-env has no node_modules (run `make js-deps`, which `make test-e2e` does): %v", err)
	}
	r := newRuntime(t, harness.Options{})
	preLog := r.preinstall("71-js-env", suite.node, []string{script}, true, "# from 71-js-env.conf\nJS_E2E_PRE=preinstalled\n")
	r.start()
	r.waitPreinstalled(1, "71-js-env")
	ext := r.external("70-js-ext", suite.node, script, "--socket", r.NRISocket, "--idx", "70", "--name", "js-ext", "--env", "JS_E2E_EXT=external")

	_, _, info := r.run(harness.NewPod("js", "pod"), harness.NewContainer("app"))
	wantEnv(t, info, "JS_E2E_EXT", "external")
	wantEnv(t, info, "JS_E2E_PRE", "preinstalled")
	// The configuration file replaced the default variable.
	wantNoEnv(t, info, "JS_PLUGIN")
	evidence(t, "external js-ext: %s", lineWith(ext.Log(), "regist"))
	evidence(t, "pre-installed 71-js-env: %s", lineWith(readFile(preLog), "regist"))
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
