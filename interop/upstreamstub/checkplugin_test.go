package upstreamstub

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// TestPassesCheckPlugin runs `nri check plugin` (conformance.CheckPlugin)
// on the upstream-stub plugin, launched the way a runtime launches it,
// subscribed to every event and to RunPodSandbox only (so the checker
// also probes unsubscribed events). Every check must pass.
func TestPassesCheckPlugin(t *testing.T) {
	for _, mode := range []string{string(behavior.Observe), string(behavior.Sync)} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			var out bytes.Buffer
			rep, err := conformance.CheckPlugin(ctx, conformance.PluginConfig{
				Command:        []string{pluginBin, "-mode", mode, "-record", filepath.Join(t.TempDir(), "rec.jsonl")},
				Env:            []string{testbin.NoRaceExitDelay},
				RequestTimeout: 10 * time.Second,
				Output:         &out,
			})
			if err != nil {
				t.Fatalf("CheckPlugin: %v", err)
			}
			var text bytes.Buffer
			rep.WriteText(&text)
			passed, failed := rep.Counts()
			if rep.Failed() || failed != 0 {
				t.Errorf("%d checks passed, %d failed:\n%s\nplugin output:\n%s", passed, failed, text.String(), out.String())
			} else {
				t.Logf("%d checks passed:\n%s", passed, text.String())
			}
		})
	}
}
