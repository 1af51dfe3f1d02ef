//go:build !linux

package identity

import (
	"context"
	"errors"
	"net"
)

// ErrUnsupported is returned by Capture on systems other than Linux.
var ErrUnsupported = errors.New("identity: peer credentials are supported on Linux only")

// Capture fails on this system.
func Capture(net.Conn) (*Peer, error) { return nil, ErrUnsupported }

func closeFD(int) error { return nil }

func inspect(context.Context, int, int, *Process, *InspectOptions) error { return ErrUnsupported }
