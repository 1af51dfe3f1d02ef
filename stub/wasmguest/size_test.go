//go:build !wasip1

package wasmguest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGuestLinksNoTransport builds a guest with and without a scope and
// looks for the names of what a guest should not carry in its module's
// name section: ttrpc (api's ttrpc services are constrained to !wasip1
// by `make generate`), and, without a scope, package filter and the
// regular expressions behind it (only WithScope refers to the gate's
// constructor). Together they are about 0.9 MB of an 8.7 MB guest.
func TestGuestLinksNoTransport(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot build a guest")
	}
	if testing.Short() {
		t.Skip("builds two WASM modules")
	}
	const (
		ttrpc  = "github.com_containerd_ttrpc."
		filter = "github.com_nrikit_nrikit_filter."
		regexp = "regexp_syntax.Compile" // not .init: an imported package keeps its init
	)
	build := func(tags string) []byte {
		t.Helper()
		out := filepath.Join(t.TempDir(), "guest.wasm")
		cmd := exec.Command(gocmd, "build", "-trimpath", "-buildmode=c-shared", "-tags="+tags, "-o", out, "./testdata/sizeguest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the guest (tags %q): %v\n%s", tags, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("guest with tags %q: %d bytes", tags, len(b))
		return b
	}
	plain := build("")
	for _, sym := range []string{ttrpc, filter, regexp} {
		if bytes.Contains(plain, []byte(sym)) {
			t.Errorf("the guest without a scope links %s*", sym)
		}
	}
	// The names are there when the code is: a guest with a scope links
	// the filter.
	scoped := build("scoped")
	if !bytes.Contains(scoped, []byte(filter)) || !bytes.Contains(scoped, []byte(regexp)) {
		t.Errorf("the guest with a scope does not link %s* and %s*: the test looks for the wrong names", filter, regexp)
	}
	if bytes.Contains(scoped, []byte(ttrpc)) {
		t.Errorf("the guest with a scope links %s*", ttrpc)
	}
}
