package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/nrikit/nrikit/internal/wirelimit"
)

// HeaderSize is the size of ttrpc's message header: length (4 bytes),
// stream ID (4), type (1), flags (1), then length bytes of payload. A
// frame of the multiplexer that carries a message of n bytes is n +
// HeaderSize bytes.
const HeaderSize = 10

// ttrpc's message types.
const (
	typeRequest  = 1
	typeResponse = 2
	typeData     = 3
)

// scanner follows the message boundaries of a ttrpc byte stream fed to
// it in pieces; with envelopes set, it checks ttrpc's envelope of each
// request and response as its bytes pass (see feed).
type scanner struct {
	hdr  [HeaderSize]byte
	have int // header bytes seen of the current message
	left int // payload bytes left of the current message, once the header is complete

	envelopes bool
	env       wirelimit.Scanner // the current message's envelope
	scanning  bool              // env follows the current message
}

// atBoundary reports whether the next byte starts a message.
func (s *scanner) atBoundary() bool { return s.have == 0 && s.left == 0 }

// limit returns how many of n bytes can be taken without crossing the end
// of the current header or payload.
func (s *scanner) limit(n int) int {
	if s.have < HeaderSize {
		return min(n, HeaderSize-s.have)
	}
	return min(n, s.left)
}

// feed takes in p and calls onHeader with the type, stream ID and data
// length of every message header completed in it. With envelopes set, it
// checks the payload of every request and response against ttrpc's
// envelope (wirelimit.RequestEnvelope, ResponseEnvelope: the metadata of
// a request, the status and its details of a response, not the method's
// message inside) as its bytes pass, before ttrpc decodes it. It returns
// the first error of onHeader or of a check.
func (s *scanner) feed(p []byte, onHeader func(typ byte, stream uint32, size int) error) error {
	for len(p) > 0 {
		if s.have < HeaderSize {
			n := copy(s.hdr[s.have:], p)
			s.have += n
			p = p[n:]
			if s.have < HeaderSize {
				continue
			}
			typ := s.hdr[8]
			s.left = int(binary.BigEndian.Uint32(s.hdr[0:4]))
			if err := onHeader(typ, binary.BigEndian.Uint32(s.hdr[4:8]), s.left); err != nil {
				return err
			}
			s.scanning = s.envelopes && (typ == typeRequest || typ == typeResponse)
			if s.scanning {
				env := wirelimit.ResponseEnvelope()
				if typ == typeRequest {
					env = wirelimit.RequestEnvelope()
				}
				s.env.Reset(env, s.left)
			}
		} else {
			n := min(len(p), s.left)
			if s.scanning {
				if err := s.env.Feed(p[:n]); err != nil {
					return envelopeError(err)
				}
			}
			s.left -= n
			p = p[n:]
		}
		if s.left == 0 {
			s.have = 0
			if s.scanning {
				if err := s.env.Close(); err != nil {
					return envelopeError(err)
				}
			}
		}
	}
	return nil
}

// envelopeError is why a plugin's message was refused by its envelope's
// check.
func envelopeError(err error) error {
	return fmt.Errorf("plugin sent a ttrpc message the runtime does not decode: %w", err)
}
