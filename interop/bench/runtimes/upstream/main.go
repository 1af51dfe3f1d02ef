// Command upstream is a runtime process for the memory benchmark: it starts
// upstream's adaptation (containerd/nri v0.12.5) with the plugins of -plugins, sends -n
// CreateContainer and PostStartContainer requests, prints its resident
// memory (workload.Memory) and stops.
package main

import (
	"context"

	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/uprt"
)

func main() {
	memrun.Main("upstream", func(ctx context.Context, dir string) (memrun.Runtime, error) {
		rt, err := uprt.Start(ctx, dir, nil, nil)
		if err != nil {
			return nil, err
		}
		return rt, nil
	})
}
