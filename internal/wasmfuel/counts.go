package wasmfuel

import (
	"bytes"
	"errors"
	"fmt"
)

// CheckCounts checks that each section's leading vector count is at most
// its payload's size (each entry takes at least a byte). wazero v1.12's
// decoder allocates by the count before reading the entries: a 30-byte
// module declaring 2^31 imports makes it ask for tens of GiB, a fatal
// out-of-memory error no recover stops. Nested vectors are not checked.
func CheckCounts(code []byte) error {
	if !bytes.HasPrefix(code, header) {
		return errors.New("wasmfuel: not a WebAssembly 1.0 binary")
	}
	r := &reader{b: code, pos: len(header)}
	for !r.eof() {
		id, err := r.byte()
		if err != nil {
			return err
		}
		n, err := r.u32()
		if err != nil {
			return fmt.Errorf("wasmfuel: section %d size: %w", id, err)
		}
		p, err := r.bytes(int(n))
		if err != nil {
			return fmt.Errorf("wasmfuel: section %d: %w", id, err)
		}
		switch id {
		case 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13: // sections that are vectors
			count, err := (&reader{b: p}).u32()
			if err != nil {
				return fmt.Errorf("wasmfuel: section %d count: %w", id, err)
			}
			if uint64(count) > uint64(len(p)) {
				return fmt.Errorf("wasmfuel: section %d declares %d entries in %d bytes", id, count, len(p))
			}
		}
	}
	return nil
}
