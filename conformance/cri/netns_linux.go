package cri

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// isNamespace returns nil if path is a mounted namespace (nsfs).
func isNamespace(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	if st.Type != unix.NSFS_MAGIC {
		return fmt.Errorf("a file, no longer a namespace (filesystem 0x%x)", st.Type)
	}
	return nil
}
