// Package prerequisites tests tools/require.sh and its use by the
// Makefile: a make target checks what it needs before it starts, so that
// a missing prerequisite fails at once, with its name and how to get it.
package prerequisites

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

// require runs tools/require.sh with groups, with PATH path, and returns
// its exit status and output.
func require(t *testing.T, path string, groups ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{filepath.Join(root, "tools", "require.sh")}, groups...)...)
	cmd.Env = []string{"PATH=" + path, "MAKE_TARGET=test-e2e"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestRequireNamesWhatIsMissing runs the script with a PATH that has only
// the few commands it uses itself: it lists every missing command with
// how to get it, and fails.
func TestRequireNamesWhatIsMissing(t *testing.T) {
	bin := t.TempDir()
	for _, c := range []string{"sed", "uname", "id"} {
		p, err := exec.LookPath(c)
		if err != nil {
			t.Skipf("no %s here", c)
		}
		if err := os.Symlink(p, filepath.Join(bin, c)); err != nil {
			t.Fatal(err)
		}
	}
	code, out := require(t, bin, "go", "node", "root")
	if code != 1 || !strings.HasPrefix(out, "make test-e2e cannot start; missing:\n") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	for _, want := range []string{
		"  go: not on PATH (Go 1.26 or newer: https://go.dev/dl",
		"  git: not on PATH (Debian: apt-get install git)",
		"  node: not on PATH (Debian: apt-get install nodejs)",
		"  npm: not on PATH (Debian: apt-get install npm)",
		"  unshare: not on PATH (Debian: apt-get install util-linux)",
		"  ip: not on PATH (Debian: apt-get install iproute2)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out := require(t, bin, "nosuch"); code != 2 || !strings.Contains(out, "unknown prerequisite group nosuch") {
		t.Errorf("an unknown group: exit %d, %s", code, out)
	}
}

// TestRequireGo: with the go command of this test on PATH, the go group
// is satisfied.
func TestRequireGo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	if code, out := require(t, os.Getenv("PATH"), "go"); code != 0 || out != "" {
		t.Errorf("exit %d, output %q", code, out)
	}
}

// TestTargetsRequireFirst checks, with make -n, that the targets that
// take long before they would notice what is missing check their
// prerequisites first: the end-to-end suites before vetting (a cold
// build of minutes), the cluster before building Kubernetes, the
// JavaScript tests before npm.
func TestTargetsRequireFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	for target, groups := range map[string][]string{
		"test-e2e":      {"go", "root", "e2e"},
		"test-e2e-crio": {"go", "root", "crio"},
		"test-cluster":  {"go", "root", "cluster"},
		"test-js":       {"node"},
		"lint":          {"go"},
		"images":        {"go"},
	} {
		cmd := exec.Command("make", "-s", "-n", target)
		cmd.Dir = root
		// A make that runs this test (CI's make --trace, make -j) passes its
		// flags down in MAKEFLAGS; they would add lines to what -n prints.
		cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n %s: %v", target, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		for i, g := range groups {
			want := "MAKE_TARGET='" + target + "' sh " + mustAbs(t) + "/tools/require.sh " + g
			if i >= len(lines) || lines[i] != want {
				t.Errorf("make %s: command %d is %q, want %q (its prerequisites checked first)\n%s", target, i+1, at(lines, i), want, out)
				break
			}
		}
	}
}

func mustAbs(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}
