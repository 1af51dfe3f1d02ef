// Package wasmbuild makes the go command that builds a Go package into a
// WASM plugin module, the one way nrikit builds guests: nri run's
// wasmPackage and the tests' guests (internal/testing/wasmtest) build the same
// bytes from the same source, so they share a compilation cache.
package wasmbuild

import (
	"context"
	"os"
	"os/exec"
)

// Command returns the go command (gocmd) that builds the Go package in
// pkgDir as a WASM plugin module at out (an absolute path, or one relative
// to pkgDir): GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared, -trimpath.
func Command(ctx context.Context, gocmd, pkgDir, out string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, gocmd, "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	return cmd
}
