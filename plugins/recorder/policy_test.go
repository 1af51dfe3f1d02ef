package recorder

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/nodepolicy"
	"github.com/nrikit/nrikit/record"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestShippedGrantAllowsPlugin: the recorder is an observer, and its grant
// in the shipped node policy allows no change: its answers to
// CreateContainer and UpdateContainer change nothing, which the grant
// allows.
func TestShippedGrantAllowsPlugin(t *testing.T) {
	p, err := New(record.Config{Path: filepath.Join(t.TempDir(), "node.nrirec")}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Recorder.Close(context.Background())
	nodepolicy.CheckObserver(t, Name, p)
}
