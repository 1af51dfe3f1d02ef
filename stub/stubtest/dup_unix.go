//go:build unix

package stubtest

import (
	"fmt"
	"os"
	"syscall"
)

// dupFile duplicates f's descriptor, close-on-exec.
func dupFile(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("stubtest: %w", err)
	}
	var (
		fd   int
		derr error
	)
	if err := sc.Control(func(raw uintptr) { fd, derr = syscall.Dup(int(raw)) }); err != nil {
		return nil, fmt.Errorf("stubtest: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("stubtest: dup: %w", derr)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name()), nil
}
