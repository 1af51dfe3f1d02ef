package logger

import (
	"log/slog"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/nodepolicy"
)

// TestShippedGrantAllowsPlugin: the plugin is an observer, and its grant
// in the shipped node policy allows no change: its answers to
// CreateContainer and UpdateContainer change nothing, which the grant
// allows.
func TestShippedGrantAllowsPlugin(t *testing.T) {
	nodepolicy.CheckObserver(t, Name, New(slog.New(slog.DiscardHandler), 0))
}
