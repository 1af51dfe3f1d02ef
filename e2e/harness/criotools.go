package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CrioBuildTags are the build tags CRI-O's Makefile builds crio with on
// Linux (libseccomp-dev must be installed for seccomp).
const CrioBuildTags = "containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion seccomp"

const crioModule = "github.com/cri-o/cri-o"

// CrioTools are the absolute paths of CRI-O's binaries.
type CrioTools struct {
	// Crio is the daemon.
	Crio string
	// NRITest is CRI-O's own NRI suite (its test/nri package, compiled
	// with `go test -c`), built with the same NRI module as Crio.
	NRITest string
	// Copyimg is CRI-O's test/copyimg, which loads images into CRI-O's
	// storage (CRI-O has no import command).
	Copyimg string
	// Pinns is CRI-O's namespace pinner, built from the C sources in
	// CRI-O's module.
	Pinns string
	// Conmon is the container monitor (Debian's).
	Conmon string
	// RuncWrap is the OCI runtime wrapper of e2e/cmd/runc-wrap, which the
	// suite builds; [NewCrio] installs it in front of Tools.Runc.
	RuncWrap string
	// Busybox is Debian's static busybox, for the image of CRI-O's NRI
	// suite.
	Busybox string
}

// The Debian packages CRI-O's runs need: the container monitor, the
// seccomp headers crio is built with, busybox for the image of CRI-O's
// NRI suite and the CNI plugins for its pods' networks.
var crioPackages = []debianPackage{
	runcPackage,
	{"conmon", "/usr/bin/conmon"},
	{"libseccomp-dev", "/usr/include/seccomp.h"},
	{"busybox-static", "/bin/busybox"},
	cniPackage,
}

// cniPackage holds the CNI plugins the pods of CRI-O and of the cluster
// use for their network (bridge, host-local, loopback in cniPluginDir).
var cniPackage = debianPackage{"containernetworking-plugins", cniPluginDir + "/loopback"}

// EnsurePodNetwork installs with apt-get the CNI plugins that pods with
// a network use (bridge, host-local and loopback: Debian's
// containernetworking-plugins), when they are missing: the cluster's
// kubelet starts no pod without them.
func EnsurePodNetwork(ctx context.Context, log io.Writer) error {
	return ensurePackages(ctx, log, cniPackage)
}

// EnsureCrio returns the binaries a CRI-O run needs: crictl and runc
// (as EnsureTools), Debian's conmon, and CRI-O CrioVersion with its NRI
// suite. Built as released (upstream's NRI inside) unless compatDir is
// set: then crio and its NRI suite are built in that module
// (compat/criobuild, which replaces github.com/containerd/nri with
// nrikit's compat/nri). The released build, copyimg and pinns are built
// once into cacheDir, in directories renamed into place when complete;
// the build on nrikit is brought up to date in cacheDir at every call,
// which the go build cache makes quick when nothing changed.
func EnsureCrio(ctx context.Context, goBin, cacheDir, compatDir string, log io.Writer) (*Tools, error) {
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	if err := ensurePackages(ctx, log, crioPackages...); err != nil {
		return nil, err
	}
	runc, err := findRunc()
	if err != nil {
		return nil, err
	}
	cri := filepath.Join(cacheDir, "crictl-"+CrictlVersion)
	if err := goInstall(ctx, goBin, cri, log, crictlPackage+"@"+CrictlVersion); err != nil {
		return nil, err
	}
	released := filepath.Join(cacheDir, "crio-"+CrioVersion)
	if err := buildOnce(released, log, func(dir string) error { return buildReleasedCrio(ctx, goBin, dir, log) }); err != nil {
		return nil, err
	}
	t := &CrioTools{
		Crio:    filepath.Join(released, "crio"),
		NRITest: filepath.Join(released, "nri.test"),
		Copyimg: filepath.Join(released, "copyimg"),
		Pinns:   filepath.Join(released, "pinns"),
		Conmon:  "/usr/bin/conmon",
		Busybox: "/bin/busybox",
	}
	if compatDir != "" {
		out := filepath.Join(cacheDir, "crio-"+CrioVersion+"-nrikit")
		fmt.Fprintf(log, "e2e: bringing CRI-O on nrikit (%s) up to date in %s\n", compatDir, out)
		if err := crioBuild(ctx, goBin, compatDir, out, log); err != nil {
			return nil, fmt.Errorf("building CRI-O on nrikit: %w", err)
		}
		t.Crio, t.NRITest = filepath.Join(out, "crio"), filepath.Join(out, "nri.test")
	}
	return &Tools{Crio: t, Crictl: filepath.Join(cri, "crictl"), Runc: runc}, nil
}

// buildOnce runs build into a new directory beside dir (dir.partial-*)
// and renames that to dir, unless dir exists. Two runs that find dir
// missing at once each build into a directory of their own: the first
// to finish renames its build into place and the other drops its own,
// so dir is always one complete build. A partial directory left by a
// run that was killed is removed by a later build once it is a day old.
func buildOnce(dir string, log io.Writer, build func(dir string) error) error {
	if _, err := os.Stat(dir); err == nil {
		fmt.Fprintf(log, "e2e: using %s\n", dir)
		return nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeStalePartials(dir)
	tmp, err := os.MkdirTemp(parent, filepath.Base(dir)+".partial-")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr == nil {
			fmt.Fprintf(log, "e2e: %s was built by another run meanwhile: using it\n", dir)
			return nil
		}
		return err
	}
	return nil
}

// stalePartial is the age past which a partial build directory is taken
// for one left by a run that was killed: no build takes that long.
const stalePartial = 24 * time.Hour

// removeStalePartials removes dir's partial build directories older than
// stalePartial.
func removeStalePartials(dir string) {
	matches, _ := filepath.Glob(dir + ".partial*")
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && time.Since(fi.ModTime()) > stalePartial {
			os.RemoveAll(m)
		}
	}
}

// buildReleasedCrio builds CRI-O as released into dir: crio, its NRI
// suite, copyimg and pinns, from a throwaway module requiring CRI-O
// CrioVersion (whose go.mod has no replace directives, so that the
// module's requirements are CRI-O's own).
func buildReleasedCrio(ctx context.Context, goBin, dir string, log io.Writer) error {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	gomod := "module nrikit.invalid/e2e/criorelease\n\ngo 1.26\n\nrequire " + crioModule + " " + CrioVersion + "\n"
	tools := "//go:build tools\n\npackage criorelease\n\nimport (\n\t_ \"" + crioModule + "/cmd/crio\"\n\t_ \"" + crioModule +
		"/test/copyimg\"\n\t_ \"" + crioModule + "/test/nri\"\n\t_ \"github.com/stretchr/testify/require\"\n)\n"
	for name, data := range map[string]string{"go.mod": gomod, "tools.go": tools} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "e2e: building CRI-O %s as released into %s (cold: ~12 min on 2 cores)\n", CrioVersion, dir)
	if err := goCmd(ctx, goBin, src, log, "mod", "tidy"); err != nil {
		return err
	}
	if err := goCmd(ctx, goBin, src, log, "build", "-tags", CrioBuildTags, "-o", dir+"/", crioModule+"/test/copyimg"); err != nil {
		return err
	}
	if err := crioBuild(ctx, goBin, src, dir, log); err != nil {
		return err
	}
	if err := buildPinns(ctx, goBin, src, dir, log); err != nil {
		return err
	}
	return os.RemoveAll(src)
}

// crioBuild builds crio and CRI-O's NRI suite in the module at modDir
// into out.
func crioBuild(ctx context.Context, goBin, modDir, out string, log io.Writer) error {
	if err := goCmd(ctx, goBin, modDir, log, "build", "-tags", CrioBuildTags, "-o", out+"/", crioModule+"/cmd/crio"); err != nil {
		return err
	}
	return goCmd(ctx, goBin, modDir, log, "test", "-c", "-o", filepath.Join(out, "nri.test"), crioModule+"/test/nri")
}

// buildPinns builds pinns from the C sources in CRI-O's module (as the
// module at modDir requires it) with make, into dir.
func buildPinns(ctx context.Context, goBin, modDir, dir string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, goBin, "list", "-m", "-f", "{{.Dir}}", crioModule)
	cmd.Dir, cmd.Env = modDir, goEnv()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("locating CRI-O's module: %w", err)
	}
	// The Makefile writes ../bin/pinns; the module cache is read-only
	// (CopyFS makes the copy writable).
	build := filepath.Join(modDir, "pinns-build")
	if err := os.CopyFS(build, os.DirFS(filepath.Join(strings.TrimSpace(string(out)), "pinns"))); err != nil {
		return fmt.Errorf("copying pinns's sources: %w", err)
	}
	mk := exec.CommandContext(ctx, "make", "-C", build)
	mk.Stdout, mk.Stderr = log, log
	if err := mk.Run(); err != nil {
		return fmt.Errorf("make pinns: %w", err)
	}
	return os.Rename(filepath.Join(modDir, "bin", "pinns"), filepath.Join(dir, "pinns"))
}

// goCmd runs the go command with args in dir, its output to log.
func goCmd(ctx context.Context, goBin, dir string, log io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir, cmd.Env = dir, goEnv()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return nil
}

// goEnv is the environment of the suite's go commands: no workspace, no
// VCS stamping, no toolchain download, and paths trimmed (the compiled
// packages of compat/nri do not depend on where the clone is, so that
// CRI-O on nrikit in a fresh clone reuses them).
func goEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false -trimpath", "GOTOOLCHAIN=local")
}

var errNoCrio = errors.New("harness: CRI-O's binaries are not built (EnsureCrio)")
