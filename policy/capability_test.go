package policy

import (
	"testing"

	"github.com/nrikit/nrikit/api/capability"
)

// TestCapabilityKeys checks that every capability has a key in a grant.
func TestCapabilityKeys(t *testing.T) {
	for _, c := range capability.AllCapabilities() {
		if specKey(c) == "" {
			t.Errorf("capability %s has no policy key", c)
		}
	}
}
