// Package consumer writes Go modules that use github.com/containerd/nri,
// as a runtime or plugin does, in two flavours: on upstream's module as
// released, and on compat/nri through the replace lines that adopting
// nrikit takes (docs/embedding.md). Tests build the same code both ways
// and compare what it does, or what the module graph resolves to.
//
// The go command runs with the module proxy only (no VCS), and with the
// sums this module and nrikit's modules already record, so only what the
// consumer adds beyond them is downloaded.
package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Flavor says which github.com/containerd/nri a consumer builds on.
type Flavor string

const (
	// Upstream is containerd/nri as released (the version the consumer
	// requires).
	Upstream Flavor = "upstream"
	// Compat is compat/nri with nrikit, through replace directives.
	Compat Flavor = "compat"
)

// Flavors are both flavours, upstream first.
var Flavors = []Flavor{Upstream, Compat}

// Module is a consumer module.
type Module struct {
	// Path is the module path.
	Path string
	// Go is the go directive's version ("1.24.0" if empty).
	Go string
	// Require lists required modules and their versions; it should
	// require github.com/containerd/nri.
	Require map[string]string
	// Files are the module's files other than go.mod, by slash-separated
	// path (go.sum is seeded with what nrikit's modules record).
	Files map[string]string
}

// Root returns nrikit's checkout, found from the working directory up.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/nrikit/nrikit\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("consumer: nrikit's checkout not found above the working directory")
		}
		dir = parent
	}
}

// Write writes m into dir in flavour f; root is nrikit's checkout.
func (m Module) Write(dir, root string, f Flavor) error {
	var b strings.Builder
	goVersion := m.Go
	if goVersion == "" {
		goVersion = "1.24.0"
	}
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire (\n", m.Path, goVersion)
	for _, mod := range sortedKeys(m.Require) {
		fmt.Fprintf(&b, "\t%s %s\n", mod, m.Require[mod])
	}
	b.WriteString(")\n")
	if f == Compat {
		fmt.Fprintf(&b, "\nreplace github.com/containerd/nri => %s\n", filepath.Join(root, "compat", "nri"))
		fmt.Fprintf(&b, "\nreplace github.com/nrikit/nrikit => %s\n", root)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	var sums bytes.Buffer
	for _, p := range []string{"go.sum", "interop/go.sum", "compat/nri/go.sum"} {
		s, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return fmt.Errorf("consumer: seeding go.sum: %w", err)
		}
		sums.Write(s)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums.Bytes(), 0o644); err != nil {
		return err
	}
	for name, text := range m.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Go runs the go command in dir with env added, with the module proxy as
// the only source of modules and the workspace off, and returns its
// standard output; an error carries its standard error.
func Go(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY="+proxy(), "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return string(out), nil
}

// proxy is GOPROXY without direct (VCS) access.
func proxy() string {
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return "https://proxy.golang.org"
	}
	var keep []string
	for _, p := range strings.FieldsFunc(strings.TrimSpace(string(out)), func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return "off"
	}
	return strings.Join(keep, ",")
}

// Versions returns the version the module graph of the module in dir
// selects for each module (go list -m all).
func Versions(ctx context.Context, dir string) (map[string]string, error) {
	out, err := Go(ctx, dir, nil, "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
	if err != nil {
		return nil, err
	}
	vs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok {
			vs[path] = version
		}
	}
	return vs, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Run runs the program bin and returns its combined output; an error
// carries it too.
func Run(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", bin, err, out)
	}
	return string(out), nil
}
