package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// configHeader marks the harness's configuration files (containerd's
// config.toml, CRI-O's crio.conf), so that SweepStale touches only the
// harness's directories.
const configHeader = "# Written by nrikit's e2e harness."

// SweepStale cleans up after earlier runs that died without cleaning up
// (a killed test binary, a test timeout): in every directory of the
// harness under parent (os.TempDir if empty) whose runtime is not
// serving, it kills the containers, shims and conmons left, unmounts what
// is mounted under it, and removes it. runc is the runc to kill
// containers with. It returns the directories removed.
func SweepStale(ctx context.Context, parent, runc string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(parent, "nrikit-e2e-*"))
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	sweptContainerd := false
	for _, dir := range dirs {
		if pid, ok := strings.CutPrefix(filepath.Base(dir), "nrikit-e2e-build-"); ok {
			// A suite's build directory, named after its process.
			if n, err := strconv.Atoi(pid); err == nil && !Alive(n) {
				if err := os.RemoveAll(dir); err != nil {
					errs = append(errs, err)
				}
				swept = append(swept, dir)
			}
			continue
		}
		switch {
		case harnessConfig(filepath.Join(dir, "config.toml")) && !listening(filepath.Join(dir, "containerd.sock")):
			c := &Containerd{Layout: &Layout{Dir: dir, Address: filepath.Join(dir, "containerd.sock")}, opts: Options{Tools: &Tools{Runc: runc}}}
			errs = append(errs, c.killLeftovers(ctx)...)
			sweptContainerd = true
		case harnessConfig(filepath.Join(dir, "crio.conf")) && !listening(filepath.Join(dir, "crio.sock")):
			errs = append(errs, killCrioLeftovers(ctx, dir, runc)...)
		default:
			continue
		}
		if err := unmountUnder(dir); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		swept = append(swept, dir)
	}
	if sweptContainerd {
		// Removed only if empty: a running containerd keeps its sockets there.
		_ = os.Remove(shimSocketDir)
		_ = os.Remove(filepath.Dir(shimSocketDir))
	}
	return swept, errors.Join(errs...)
}

// harnessConfig reports whether path is a configuration file the
// harness wrote.
func harnessConfig(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.HasPrefix(string(b), configHeader)
}
