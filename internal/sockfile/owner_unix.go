//go:build unix

package sockfile

import (
	"io/fs"
	"syscall"
)

// owner returns the user ID owning the file.
func owner(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
