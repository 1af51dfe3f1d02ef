package wasmfuel

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

var errTruncated = errors.New("truncated")

// reader decodes a WebAssembly binary from a byte slice.
type reader struct {
	b   []byte
	pos int
}

func (r *reader) eof() bool { return r.pos >= len(r.b) }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, errTruncated
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s, nil
}

// u32 reads an unsigned LEB128 of at most 32 bits.
func (r *reader) u32() (uint32, error) {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 0xffffffff {
				return 0, fmt.Errorf("u32 overflows at %d", r.pos)
			}
			return uint32(v), nil
		}
	}
	return 0, fmt.Errorf("u32 too long at %d", r.pos)
}

// skipLEB skips a signed or unsigned LEB128 of at most maxBytes bytes.
func (r *reader) skipLEB(maxBytes int) error {
	for i := 0; i < maxBytes; i++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return fmt.Errorf("LEB128 too long at %d", r.pos)
}

// appendU32 appends v as an unsigned LEB128, which is protobuf's varint.
func appendU32(b []byte, v uint32) []byte {
	return protowire.AppendVarint(b, uint64(v))
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}
