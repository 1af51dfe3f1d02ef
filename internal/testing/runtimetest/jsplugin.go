package runtimetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireJSEnv is the environment variable that makes the tests running
// the JavaScript plugin (plugins/js-env) fail instead of skip when node or
// the plugin's npm dependencies are missing. `make test-js` sets it after
// installing them; `make test-unit` skips those tests and needs no npm.
const RequireJSEnv = "NRIKIT_REQUIRE_JS"

// JSPlugin returns the node binary and the entry point of the JavaScript
// plugin in dir (plugins/js-env, relative to the calling test's package).
// Without node or the plugin's npm dependencies the test is skipped, or
// fails if RequireJSEnv is set.
func JSPlugin(t testing.TB, dir string) (node, plugin string) {
	t.Helper()
	missing := t.Skipf
	if os.Getenv(RequireJSEnv) != "" {
		missing = t.Fatalf
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the JavaScript plugin cannot run (install Node.js 20 or later)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", "protobufjs")); err != nil {
		missing("%s/node_modules is missing: run `npm ci --prefix %s` (make js-deps)", abs, abs)
	}
	return node, filepath.Join(abs, "plugin.js")
}
