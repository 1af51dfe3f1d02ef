// Command upstream is a runtime process for the memory benchmark: it starts
// upstream's adaptation (containerd/nri v0.12.5) with the plugins of -plugins, sends -n
// CreateContainer and PostStartContainer requests, prints its resident
// memory (workload.Memory) and stops.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nrikit/nrikit/interop/bench/internal/uprt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

func main() {
	dir := flag.String("plugins", "", "plugin directory")
	n := flag.Int("n", 1000, "requests of each kind")
	want := flag.Int("want", 0, "plugins that must be registered")
	flag.Parse()
	if err := run(*dir, *n, *want); err != nil {
		fmt.Fprintln(os.Stderr, "upstream bench runtime:", err)
		os.Exit(1)
	}
}

func run(dir string, n, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt, err := uprt.Start(ctx, dir, nil, nil)
	if err != nil {
		return err
	}
	defer rt.Stop(ctx)
	if got := rt.Plugins(); got != want {
		return fmt.Errorf("%d plugins registered, want %d", got, want)
	}
	rt.Prepare(n)
	for i := range n {
		if _, err := rt.Create(ctx, i); err != nil {
			return err
		}
		if err := rt.PostStart(ctx); err != nil {
			return err
		}
	}
	rt.Prepare(0)
	m, err := workload.ReadMemory(0)
	if err != nil {
		return err
	}
	fmt.Println(m)
	return nil
}
