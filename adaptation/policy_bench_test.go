package adaptation

import (
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/benchpolicy"
)

// BenchmarkPolicyCreateContainer is BenchmarkCreateContainer with 1 and
// 16 plugins, without a policy and under a policy of 20 grants that
// allows the plugins' answers: the cost of enforcement.
func BenchmarkPolicyCreateContainer(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("plugins=%d/policy=none", n), func(b *testing.B) { benchCreateContainer(b, n) })
		b.Run(fmt.Sprintf("plugins=%d/policy=20-grants", n), func(b *testing.B) {
			benchCreateContainer(b, n, WithPolicy(parsePolicy(b, benchpolicy.Doc("VAR*", "OTHER_*"))))
		})
	}
}
