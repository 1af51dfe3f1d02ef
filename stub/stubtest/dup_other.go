//go:build !unix

package stubtest

import (
	"errors"
	"os"
)

// dupFile fails off Unix: the in-process runtime's socket pairs exist on
// Linux only.
func dupFile(*os.File) (*os.File, error) {
	return nil, errors.New("stubtest: duplicating descriptors needs Unix")
}
