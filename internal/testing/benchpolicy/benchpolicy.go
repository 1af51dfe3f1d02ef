// Package benchpolicy writes the policy the benchmarks of enforcement use
// (adaptation's BenchmarkPolicyCreateContainer and the interop bench's
// Policy rows), so that both measure the same rules.
package benchpolicy

import (
	"fmt"
	"strings"
)

// Doc returns a policy document of 20 grants: 19 for other plugins, each
// with rules of several kinds (where, env, mounts, devices, rlimits), then
// the one of the benchmarks' env* plugins, which allows the variables
// matching envPatterns among other things, so that their answers are
// allowed and what is measured is the check, not a refusal.
func Doc(envPatterns ...string) string {
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
	env := make([]string, len(envPatterns))
	for i, p := range envPatterns {
		env[i] = fmt.Sprintf("%q", p)
	}
	fmt.Fprintf(&b, `  - plugins: ["env*"]
    adjust:
      env: [%s]
      annotations: ["example.com/*"]
      mounts: {sources: [{path: /srv/models}]}
      devices: [{path: "/dev/nvidia*", type: c, major: 195}]
      rlimits: {RLIMIT_NOFILE: {hard: 65536}, RLIMIT_MEMLOCK: {}}
      resources: {memory: {maxLimit: 8Gi}, cpu: {maxShares: 4096}}
    update: {cpu: {maxShares: 4096}}
`, strings.Join(env, ", "))
	return b.String()
}
