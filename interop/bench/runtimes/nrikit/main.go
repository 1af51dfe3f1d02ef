// Command nrikit is a runtime process for the memory benchmark: it starts
// nrikit's adaptation with the plugins of -plugins, sends -n
// CreateContainer and PostStartContainer requests, prints its resident
// memory (workload.Memory) and stops.
package main

import (
	"context"

	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/nrirt"
)

func main() {
	memrun.Main("nrikit", func(ctx context.Context, dir string) (memrun.Runtime, error) {
		rt, err := nrirt.Start(ctx, dir, nil, nil)
		if err != nil {
			return nil, err
		}
		return rt, nil
	})
}
