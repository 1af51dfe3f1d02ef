//go:build !linux

package socketpair

import (
	"errors"
	"testing"
)

// TestUnsupported: off Linux every operation fails with ErrUnsupported
// instead of the package not compiling.
func TestUnsupported(t *testing.T) {
	if _, err := New(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("New: %v, want ErrUnsupported", err)
	}
	if _, err := FileConn(3); !errors.Is(err, ErrUnsupported) {
		t.Errorf("FileConn: %v, want ErrUnsupported", err)
	}
	if _, err := PeerPID(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("PeerPID: %v, want ErrUnsupported", err)
	}
}
