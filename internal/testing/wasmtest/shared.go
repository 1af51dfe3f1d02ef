package wasmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// wasmhostPkg is the package whose test binary precompiles (Precompile).
const wasmhostPkg = "github.com/nrikit/nrikit/internal/wasmhost"

// sharedFormat names the layout of the shared compilation caches: a
// change to what a shared cache holds or how its key is made changes it.
const sharedFormat = "nrikit-wasmtest-precompiled-v1"

// precompileShared fills the compilation cache dir for module as
// Precompile does, from a copy kept in the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache, nrikit/wasmtest) when one was made from
// the same inputs, and keeps a copy there when none was.
//
// Every test binary that loads a guest under the race detector used to
// build internal/wasmhost's test binary without it and compile the guest
// with it, once per test binary and run (seconds of CPU each, most of a
// minute per make test). The compiled code is a function of the module's
// bytes and of the code that compiles it: the packages of that test
// binary (wazero, wasmfuel, wasmhost and its test code, the standard
// library) and the toolchain. The key is the hash of the module and of
// the go command's build IDs of all those packages (go list -deps -test
// -export), which change when any of their sources, the toolchain or the
// flags do; so a change to the code under test makes a new entry, never
// a stale hit. An entry is made complete in a temporary directory and
// renamed into place, and is never written again: each test binary
// copies it into its own directory, which its tests may change (the
// wasmhost cache's seal records each file's stamp; the copy's files are
// hashed again on first load, as a cache moved by an operator would be).
// Where the user's cache directory cannot be used, it precompiles as
// Precompile does.
func precompileShared(ctx context.Context, gocmd, module, dir string) error {
	root, err := os.UserCacheDir()
	if err != nil {
		return Precompile(ctx, gocmd, module, dir)
	}
	key, err := precompileKey(ctx, gocmd, module)
	if err != nil {
		return err
	}
	shared := filepath.Join(root, "nrikit", "wasmtest", key)
	if _, err := os.Stat(shared); err == nil {
		if err := os.CopyFS(dir, os.DirFS(shared)); err == nil {
			return nil
		}
		// A damaged entry: compile anew, leave it for a later run to see.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := Precompile(ctx, gocmd, module, dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(shared), 0o755); err != nil {
		return nil // the tests have their cache; keeping a copy is a saving
	}
	tmp, err := os.MkdirTemp(filepath.Dir(shared), key+".partial-")
	if err != nil {
		return nil
	}
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil || os.Rename(tmp, shared) != nil {
		// Another test binary kept the same entry first, or the copy
		// failed: keep nothing of this one.
		_ = os.RemoveAll(tmp)
	}
	return nil
}

// precompileKey returns the key of module's shared compilation cache:
// the hash of sharedFormat, the module's bytes and the build IDs of the
// packages of internal/wasmhost's test binary as Precompile builds it.
func precompileKey(ctx context.Context, gocmd, module string) (string, error) {
	code, err := os.ReadFile(module)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, gocmd, "list", "-trimpath", "-deps", "-test", "-export", "-f", "{{.ImportPath}} {{.BuildID}}", wasmhostPkg)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	ids, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("listing the build IDs of %s's test binary: %w", wasmhostPkg, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\nmodule %x\n", sharedFormat, sha256.Sum256(code))
	h.Write(ids)
	return hex.EncodeToString(h.Sum(nil)), nil
}
