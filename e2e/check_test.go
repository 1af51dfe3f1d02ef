package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nrikit/nrikit/e2e/harness"
)

// TestCheckRuntime runs `nri check runtime` against containerd's NRI
// socket. The reference runtime must pass the checks the NRI protocol
// requires (exit 0); how it refuses unknown event bits (it closes the
// connection after Configure, without a reason) is reported as
// informational (issue 14 item 1).
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
	if code != 0 {
		t.Fatalf("nri check runtime against containerd exited %d", code)
	}
	evidence(t, "nri check runtime against containerd: exit 0: %s; %s", lastLine(string(out)), lineWith(string(out), "INFO  gives the reason"))
}
