package compatstub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nrikit/nrikit/interop/internal/consumer"
)

// plugins are testdata/plugin built on each flavour, by flavour.
var plugins = map[consumer.Flavor]string{}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "interop-compatstub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildPlugins(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildPlugins builds testdata/plugin in a consumer module of each
// flavour, requiring upstream v0.12.5 as the plugins of containerd/nri's
// tree do.
func buildPlugins(dir string) error {
	root, err := consumer.Root()
	if err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join("testdata", "plugin", "main.go"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, f := range consumer.Flavors {
		mod := consumer.Module{
			Path:    "example.com/compatstub",
			Require: map[string]string{"github.com/containerd/nri": "v0.12.5"},
			Files:   map[string]string{"main.go": string(src)},
		}
		modDir := filepath.Join(dir, string(f))
		if err := mod.Write(modDir, root, f); err != nil {
			return err
		}
		// The same executable name for both: upstream names a plugin
		// launched without a name after its executable.
		bin := filepath.Join(dir, string(f), "bin", "compatstub")
		if _, err := consumer.Go(ctx, modDir, nil, "build", "-o", bin, "."); err != nil {
			return err
		}
		plugins[f] = bin
	}
	return nil
}
