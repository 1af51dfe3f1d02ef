package adaptation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// The routes of issue 37 ("Trust, second step") that the runtime's
// enforcement did not hold.

// TestRoutePolicyDirectoryRuntime: a policy file's directory others may
// write is not trusted: without the file (anyone may have removed it) the
// runtime fails closed instead of running with no policy, and so it does
// with the file (route "policy directory").
func TestRoutePolicyDirectoryRuntime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nri")
	must(t, os.Mkdir(dir, 0o777))
	must(t, os.Chmod(dir, 0o777))
	path := filepath.Join(dir, "policy.yaml")
	for _, present := range []bool{false, true} {
		if present {
			writePolicy(t, path, "default: {adjust: {env: [\"*\"]}}\n")
		}
		rt := newTestRuntime(t, nil, WithPolicyFile(path), WithPolicyReloadInterval(time.Hour),
			WithBuiltinPlugin("10", "env", &policed{env: []string{"A"}}))
		rt.start(t)
		if rt.a.Policy() == nil {
			t.Fatalf("file present %v: no policy: a directory others may write let every plugin do everything", present)
		}
		rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
		must(t, err)
		if env := envOf(rsp.Adjust); len(env) != 0 {
			t.Errorf("file present %v: the plugin changed %v under an untrusted policy directory", present, env)
		}
		rt.logs.wait(t, "untrusted directory log", func(r logRecord) bool {
			return r.msg == "invalid policy file: no plugin may change anything until it is fixed" &&
				strings.Contains(r.attrs["error"], "writable by its group or others")
		})
	}
}
