package adaptation

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// benchPolicy is a policy of 20 grants: 19 for other plugins, each with
// rules of several kinds, then the one of the benchmark's env* plugins,
// which allows their variables among other things.
func benchPolicy() string {
	var b strings.Builder
	b.WriteString("required: []\ngrants:\n")
	for i := range 19 {
		fmt.Fprintf(&b, `  - plugins: [other%d, "9%d-*"]
    where: {namespaces: [ns%d-*]}
    adjust:
      env: ["X%d_*"]
      mounts: {sources: [{path: /srv/d%d}]}
      devices: [{path: "/dev/d%d*", type: c, major: %d}]
      rlimits: {RLIMIT_NOFILE: {hard: 4096}}
`, i, i%10, i, i, i, i, 200+i)
	}
	b.WriteString(`  - plugins: ["env*"]
    adjust:
      env: ["VAR*", "OTHER_*"]
      annotations: ["example.com/*"]
      mounts: {sources: [{path: /srv/models}]}
      devices: [{path: "/dev/nvidia*", type: c, major: 195}]
      rlimits: {RLIMIT_NOFILE: {hard: 65536}, RLIMIT_MEMLOCK: {}}
      resources: {memory: {maxLimit: 8Gi}, cpu: {maxShares: 4096}}
    update: {cpu: {maxShares: 4096}}
`)
	return b.String()
}

// BenchmarkPolicyCreateContainer is BenchmarkCreateContainer with 1 and
// 16 plugins, without a policy and under a policy of 20 grants that
// allows the plugins' answers: the cost of enforcement.
func BenchmarkPolicyCreateContainer(b *testing.B) {
	for _, n := range []int{1, 16} {
		for _, withPolicy := range []bool{false, true} {
			name := fmt.Sprintf("plugins=%d/policy=none", n)
			if withPolicy {
				name = fmt.Sprintf("plugins=%d/policy=20-grants", n)
			}
			b.Run(name, func(b *testing.B) {
				var plugins []testPlugin
				for i := range n {
					plugins = append(plugins, testPlugin{fmt.Sprintf("%02d-env%d", 10+i, i),
						helperArgs("stub", "-quiet", "-events", "CreateContainer", "-env", fmt.Sprintf("VAR%d=%d", i, i))})
				}
				opts := []Option{WithLogger(slog.New(slog.DiscardHandler)), WithDisabledExternalConnections()}
				if withPolicy {
					opts = append(opts, WithPolicy(parsePolicy(b, benchPolicy())))
				}
				rt := newTestRuntime(b, plugins, opts...)
				rt.start(b)
				ctx := context.Background()
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					start := time.Now()
					rsp, err := rt.a.CreateContainer(ctx, benchRequest())
					lat = append(lat, time.Since(start))
					if err != nil || len(rsp.Adjust.GetEnv()) != n {
						b.Fatalf("CreateContainer: %v %v", rsp, err)
					}
				}
				b.StopTimer()
				reportLatencies(b, lat)
			})
		}
	}
}
