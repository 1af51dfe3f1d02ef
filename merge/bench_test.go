package merge_test

import (
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
)

// BenchmarkCreateMerge merges the answers of 16 plugins that each add one
// environment variable.
func BenchmarkCreateMerge(b *testing.B) {
	const plugins = 16
	names := make([]string, plugins)
	for i := range names {
		names[i] = fmt.Sprintf("%02d-plugin", i)
	}
	pod, ctr := testPod(), testContainer()
	b.ReportAllocs()
	for b.Loop() {
		c := merge.NewCreate(pod, ctr)
		for i, name := range names {
			rsp := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
				Env: []*api.KeyValue{{Key: fmt.Sprintf("VAR%d", i), Value: "v"}},
			}}
			if err := c.Apply(name, rsp); err != nil {
				b.Fatal(err)
			}
		}
		if len(c.Adjustment().Env) != plugins {
			b.Fatalf("got %d env vars", len(c.Adjustment().Env))
		}
	}
}
