// Package testbin builds the interoperability test plugins once per test
// binary and installs them, as wrapper scripts with fixed arguments, into
// plugin directories.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LDFlags is the flag every binary linking both upstream's api package and
// nrikit's needs: the two register the same protobuf names.
const LDFlags = "-ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore"

// NoRaceExitDelay stops race-enabled plugin processes from sleeping a
// second at exit; Install and Start put it in the plugins' environment.
const NoRaceExitDelay = "GORACE=atexit_sleep_ms=0"

// Import paths of the test plugins.
const (
	UpstreamPlugin = "github.com/nrikit/nrikit/interop/internal/upstreamplugin"
	NrikitPlugin   = "github.com/nrikit/nrikit/interop/internal/nrikitplugin"
)

// Build compiles the packages into dir and returns the binaries' paths,
// by package. The binaries are race-enabled if race is set (use it when
// the test binary is, so the plugins are checked too).
func Build(dir string, race bool, pkgs ...string) (map[string]string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("testbin: %w", err)
	}
	out := map[string]string{}
	for _, pkg := range pkgs {
		bin := filepath.Join(dir, filepath.Base(pkg))
		args := []string{"build", LDFlags, "-o", bin}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command(goBin, append(args, pkg)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("testbin: go build %s: %w\n%s", pkg, err, msg)
		}
		out[pkg] = bin
	}
	return out, nil
}

// BuildModule compiles the main package in moduleDir (relative to the
// test's directory, or absolute) into dir/name, on the dependencies of
// the module moduleDir is in, not the interop module's: a module of its
// own beside the interop module, or a command of nrikit's main module
// whose dependencies the interop module does not have. With modfile (such as
// "go.v0.10.0.mod", beside go.mod, with its .sum) the module is built on
// the dependencies that file requires instead of go.mod's: one plugin
// source, several upstream NRI versions. The module's go.sum files are
// committed; the go command downloads what they list from the module
// proxy.
func BuildModule(dir, name, moduleDir, modfile string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	bin, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	args := []string{"build", "-o", bin}
	if modfile != "" {
		args = append(args, "-modfile="+modfile)
	}
	cmd := exec.Command(goBin, append(args, ".")...)
	cmd.Dir = moduleDir
	// The interop module's flags and workspace are not the module's.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go %s in %s: %w\n%s", strings.Join(args, " "), moduleDir, err, msg)
	}
	return bin, nil
}

// Install writes an executable script dir/fullName ("IDX-NAME") that
// runs bin with args, for a runtime to launch as a pre-installed plugin.
// The script keeps the runtime's file descriptors and process (it execs),
// and needs no environment: upstream's runtime launches plugins with only
// the NRI variables.
func Install(dir, fullName, bin string, args ...string) error {
	var b strings.Builder
	b.WriteString("#!/bin/sh\nexport " + NoRaceExitDelay + "\nexec ")
	b.WriteString(quote(bin))
	for _, a := range args {
		b.WriteString(" ")
		b.WriteString(quote(a))
	}
	b.WriteString("\n")
	if err := os.WriteFile(filepath.Join(dir, fullName), []byte(b.String()), 0o755); err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
