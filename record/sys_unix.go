//go:build unix

package record

import (
	"os"
	"syscall"
)

// noFollow refuses to open a symbolic link as the last path element: a
// recording or key path swapped for a link cannot redirect a write.
const noFollow = syscall.O_NOFOLLOW

// nonBlock opens a FIFO at a recording's path without waiting for a
// reader (a regular file ignores it): the open fails, or succeeds and the
// file is then refused for not being a regular file, instead of hanging.
const nonBlock = syscall.O_NONBLOCK

// ownedBySelf reports whether the file is owned by the effective user:
// a key file someone else made could be one whose key they know.
func ownedBySelf(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
