package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Pinned versions of the runtime under test and of its CRI client.
const (
	// ContainerdVersion is the containerd release the suite runs
	// (it embeds github.com/containerd/nri v0.12.3).
	ContainerdVersion = "v2.4.2"
	// CrictlVersion is the cri-tools release of crictl.
	CrictlVersion = "v1.37.0"
	// CrioVersion is the CRI-O release the suite runs (it pins
	// github.com/containerd/nri v0.11.0), served by the Go module proxy.
	CrioVersion = "v1.36.3"
)

const (
	containerdModule = "github.com/containerd/containerd/v2"
	crictlPackage    = "sigs.k8s.io/cri-tools/cmd/crictl"
)

// Tools are the absolute paths of the binaries the suite runs.
type Tools struct {
	// Containerd, Ctr and Shim are containerd's daemon, its client and
	// the runc shim (which must be on containerd's PATH); empty when the
	// suite runs CRI-O.
	Containerd, Ctr, Shim string
	// Crio are CRI-O's binaries (EnsureCrio); nil when the suite runs
	// containerd.
	Crio *CrioTools
	// Crictl is the CRI client.
	Crictl string
	// Runc is the OCI runtime.
	Runc string
}

// Preflight reports why the suite cannot run on this machine: not Linux,
// not root, or unshare or ip missing. It returns nil when it can.
func Preflight() error {
	var why []string
	if runtime.GOOS != "linux" {
		why = append(why, "needs Linux, this is "+runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		why = append(why, fmt.Sprintf("needs root (containerd, runc and network namespaces), running as uid %d", os.Geteuid()))
	}
	for _, bin := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			why = append(why, fmt.Sprintf("needs %s on PATH (util-linux's unshare, iproute2's ip): %v", bin, err))
		}
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		why = append(why, "needs network namespaces: "+err.Error())
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// DefaultBinCache is where the e2e suite and the cluster test keep the
// released runtimes and tools between runs, by version: the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache)/nrikit/e2e, which outlives a
// clone (CI checks out a fresh one each time), else .bin in e2eDir.
func DefaultBinCache(e2eDir string) string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "nrikit", "e2e")
	}
	return filepath.Join(e2eDir, ".bin")
}

// EnsureTools returns the pinned binaries, building those missing from
// cacheDir with `go install` from the Go module proxy, and installs runc
// with apt-get when it is not on PATH. A version's binaries are built into
// a directory named after it and renamed into place only when complete, so
// a present directory is a complete build of that version. Progress goes
// to log.
func EnsureTools(ctx context.Context, goBin, cacheDir string, log io.Writer) (*Tools, error) {
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	ctrd := filepath.Join(cacheDir, "containerd-"+ContainerdVersion)
	cri := filepath.Join(cacheDir, "crictl-"+CrictlVersion)
	if err := goInstall(ctx, goBin, ctrd, log,
		containerdModule+"/cmd/containerd@"+ContainerdVersion,
		containerdModule+"/cmd/ctr@"+ContainerdVersion,
		containerdModule+"/cmd/containerd-shim-runc-v2@"+ContainerdVersion); err != nil {
		return nil, err
	}
	if err := goInstall(ctx, goBin, cri, log, crictlPackage+"@"+CrictlVersion); err != nil {
		return nil, err
	}
	if err := ensurePackages(ctx, log, runcPackage); err != nil {
		return nil, err
	}
	runc, err := findRunc()
	if err != nil {
		return nil, err
	}
	return &Tools{
		Containerd: filepath.Join(ctrd, "containerd"),
		Ctr:        filepath.Join(ctrd, "ctr"),
		Shim:       filepath.Join(ctrd, "containerd-shim-runc-v2"),
		Crictl:     filepath.Join(cri, "crictl"),
		Runc:       runc,
	}, nil
}

// goInstall builds pkgs (each pkg@version) into dir unless dir exists
// (buildOnce).
func goInstall(ctx context.Context, goBin, dir string, log io.Writer, pkgs ...string) error {
	return buildOnce(dir, log, func(tmp string) error {
		fmt.Fprintf(log, "e2e: building %s into %s\n", strings.Join(pkgs, " "), dir)
		cmd := exec.CommandContext(ctx, goBin, append([]string{"install"}, pkgs...)...)
		cmd.Dir = tmp // outside any module: `go install pkg@version` uses the package's own go.mod
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go install %s: %w", strings.Join(pkgs, " "), err)
		}
		return nil
	})
}

// debianPackage is a Debian package and a file it installs.
type debianPackage struct{ name, file string }

var runcPackage = debianPackage{"runc", "runc"}

// present reports whether the package's file is there (runc: anywhere
// findRunc looks).
func (p debianPackage) present() bool {
	if p == runcPackage {
		_, err := findRunc()
		return err == nil
	}
	_, err := os.Stat(p.file)
	return err == nil
}

// ensurePackages installs with apt-get those of pkgs whose file is
// missing, in one run.
func ensurePackages(ctx context.Context, log io.Writer, pkgs ...debianPackage) error {
	var missing []string
	for _, p := range pkgs {
		if !p.present() {
			missing = append(missing, p.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s not installed and apt-get is not available to install them", strings.Join(missing, ", "))
	}
	fmt.Fprintf(log, "e2e: installing %s with apt-get\n", strings.Join(missing, " "))
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
	}
	for _, p := range pkgs {
		if !p.present() {
			return fmt.Errorf("%s still missing after apt-get install %s", p.file, p.name)
		}
	}
	return nil
}

// findRunc finds runc on PATH or in the usual places.
func findRunc() (string, error) {
	if p, err := exec.LookPath("runc"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("runc is not installed")
}
