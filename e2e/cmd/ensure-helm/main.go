// Command ensure-helm builds the helm command of the version e2e/go.mod
// requires (helm.sh/helm/v3, a tool of this module) into the user's cache
// directory, where the cluster test keeps it (~/.cache/nrikit/helm-VERSION,
// or NRIKIT_CLUSTER_BIN/helm-VERSION), unless it is there already, and
// prints its path: the route to a helm binary for deploy/README.md's helm
// lines (`make helm`). The first build takes minutes and about 1 GB of
// disk for Helm's modules and build cache; progress goes to stderr.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/nrikit/nrikit/e2e/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ensure-helm:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cache := os.Getenv("NRIKIT_CLUSTER_BIN")
	if cache == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no user cache directory (set NRIKIT_CLUSTER_BIN): %w", err)
		}
		cache = filepath.Join(uc, "nrikit")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "ensure-helm: building helm into "+cache+" unless it is there (a first build takes minutes)")
	helm, err := harness.EnsureHelm(ctx, goBin, wd, cache, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Println(helm)
	return nil
}
