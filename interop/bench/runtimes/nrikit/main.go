// Command nrikit is a runtime process for the memory benchmark: it starts
// nrikit's adaptation with the plugins of -plugins (configured from
// -config, WASM modules compiled through the cache -wasm-cache; -existing
// containers to synchronize them with), sends -n
// CreateContainer and PostStartContainer requests, prints its resident
// memory (workload.Memory) and stops.
package main

import (
	"context"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/nrirt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

func main() {
	memrun.Main("nrikit", func(ctx context.Context, s memrun.Setup) (memrun.Runtime, error) {
		if s.Existing > 0 {
			s.Pods, s.Ctrs = workload.Existing(s.Existing)
			if err := workload.ResetPeak(); err != nil {
				return nil, err
			}
		}
		rt, err := nrirt.Start(ctx, s.PluginDir, s.Pods, s.Ctrs,
			adaptation.WithConfigDir(s.ConfigDir), adaptation.WithWASMCacheDir(s.WASMCacheDir))
		if err != nil {
			return nil, err
		}
		return rt, nil
	})
}
