package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/e2e/harness"
)

// TestCheckRuntime runs `nri check runtime` against containerd's NRI
// socket. The reference runtime must pass the checks the NRI protocol
// requires (exit 0); how it refuses unknown event bits (it closes the
// connection after Configure, without a reason) is reported as
// informational (issue 14 item 1).
//
// CRI-O as released embeds NRI v0.11.0, which registers a plugin with an
// invalid name (CheckPluginName came with v0.12): there exactly that check
// must fail, and the others pass; CRI-O on nrikit must pass them all.
func TestCheckRuntime(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	r.samplePlugin("logger", "10") // a plugin already connected, as on a node

	cmd := exec.CommandContext(r.ctx, filepath.Join(suite.bin, "nri"), "check", "runtime", "--socket", r.NRISocket, "--color", "never")
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("nri check runtime --socket %s: exit %d\n%s", r.NRISocket, code, out)
	if suite.crio && !suite.nrikit {
		var failed []string
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.TrimSpace(l); strings.HasPrefix(f, "FAIL ") {
				failed = append(failed, f)
			}
		}
		if code == 0 || len(failed) != 1 || !strings.Contains(failed[0], "rejects an invalid plugin name") || !strings.Contains(failed[0], "RegisterPlugin succeeded") {
			t.Fatalf("nri check runtime against CRI-O %s (NRI v0.11.0): exit %d, failed %q; want only the invalid-name check failed", harness.CrioVersion, code, failed)
		}
		evidence(t, "nri check runtime against CRI-O as released (NRI v0.11.0): exit %d: %s; %s", code, failed[0], lastLine(string(out)))
		return
	}
	if code != 0 {
		t.Fatalf("nri check runtime against %s exited %d", r.Kind(), code)
	}
	evidence(t, "nri check runtime against %s: exit 0: %s; %s", r.Kind(), lastLine(string(out)), lineWith(string(out), "INFO  gives the reason"))
}
