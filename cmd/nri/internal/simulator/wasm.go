package simulator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nrikit/nrikit/internal/wasmbuild"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// pluginFile says what the file at path is as a plugin: a WASM module
// (wasm true) or an executable. It fails for anything else.
func pluginFile(path string) (wasm bool, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if info.IsDir() {
		return false, fmt.Errorf("%s is a directory, not an executable file or a WASM module", path)
	}
	if wasm, err := wasmhost.IsModule(path); err != nil || wasm {
		return wasm, err
	}
	if info.Mode()&0o111 == 0 {
		return false, fmt.Errorf("%s is neither an executable file nor a WASM module (a file starting with the bytes \\0asm\\1\\0\\0\\0)", path)
	}
	return false, nil
}

// buildNotice is how long a WASM build may take before the simulator
// tells the user that it is building: a build out of Go's build cache
// takes well under a second, a cold one up to a minute.
const buildNotice = 2 * time.Second

// checkPackageDir checks that dir is a Go package's directory.
func checkPackageDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("wasmPackage: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("wasmPackage %s is not a directory (it names a Go package's directory)", dir)
	}
	if goFiles, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(goFiles) == 0 {
		return fmt.Errorf("wasmPackage %s holds no Go source files", dir)
	}
	return nil
}

// buildWASM builds the Go package in dir into the WebAssembly plugin
// module out, with the go command on PATH. Go's build cache makes a
// build of an unchanged package fast.
func buildWASM(ctx context.Context, log *slog.Logger, plugin, dir, out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building its WASM module needs the Go toolchain, and there is no go command on PATH: %w", err)
	}
	cmd := wasmbuild.Command(ctx, goTool, dir, out)
	cmd.WaitDelay = 5 * time.Second
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	log.Info("building WASM plugin", "plugin", plugin, "package", dir)
	start := time.Now()
	notice := time.AfterFunc(buildNotice, func() {
		log.Warn("building WASM plugin with go build: the first build takes up to a minute, later ones come from Go's build cache",
			"plugin", plugin, "package", dir)
	})
	err = cmd.Run()
	notice.Stop()
	if err != nil {
		msg := strings.TrimSpace(output.String())
		if ctx.Err() != nil {
			return fmt.Errorf("GOOS=wasip1 GOARCH=wasm go build in %s: %w (%v)", dir, ctx.Err(), err)
		}
		return fmt.Errorf("GOOS=wasip1 GOARCH=wasm go build in %s: %w\n%s", dir, err, msg)
	}
	log.Info("built WASM plugin", "plugin", plugin, "took", time.Since(start).Round(time.Millisecond))
	// go build honours the umask; the runtime refuses a module its
	// group may write.
	return os.Chmod(out, 0o644)
}
