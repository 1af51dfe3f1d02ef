// Command upstream is a runtime process for the memory benchmark: it starts
// upstream's adaptation (containerd/nri v0.12.5) with the plugins of -plugins
// (configured from -config; -existing containers to synchronize them
// with), sends -n
// CreateContainer and PostStartContainer requests, prints its resident
// memory (workload.Memory) and stops.
package main

import (
	"context"
	"errors"

	"github.com/containerd/nri/pkg/adaptation"

	"github.com/nrikit/nrikit/interop/bench/internal/memrun"
	"github.com/nrikit/nrikit/interop/bench/internal/uprt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

func main() {
	memrun.Main("upstream", func(ctx context.Context, s memrun.Setup) (memrun.Runtime, error) {
		if s.WASMCacheDir != "" {
			return nil, errors.New("upstream has no WASM compilation cache")
		}
		var opts []adaptation.Option
		if s.ConfigDir != "" {
			opts = append(opts, adaptation.WithPluginConfigPath(s.ConfigDir))
		}
		if s.Existing > 0 {
			s.Pods, s.Ctrs = workload.Existing(s.Existing)
			if err := workload.ResetPeak(); err != nil {
				return nil, err
			}
		}
		pods, ctrs := uprt.Existing(s.Pods, s.Ctrs)
		rt, err := uprt.Start(ctx, s.PluginDir, pods, ctrs, opts...)
		if err != nil {
			return nil, err
		}
		return rt, nil
	})
}
