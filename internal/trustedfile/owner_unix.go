//go:build unix

package trustedfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openFlags keeps an open from blocking on a FIFO (a regular file is
// read as usual).
const openFlags = syscall.O_NONBLOCK

// checkOwner requires fi to be owned by root or the effective user.
func checkOwner(path string, fi fs.FileInfo) error {
	if r := ownerReason(fi); r != "" {
		return &Error{Path: path, Reason: r}
	}
	return nil
}

// ownerReason says why fi's owner is not trusted, "" if it is.
func ownerReason(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "of unknown owner"
	}
	euid := os.Geteuid()
	switch {
	case st.Uid == 0 || int(st.Uid) == euid:
		return ""
	case euid == 0:
		return fmt.Sprintf("owned by uid %d, not by root", st.Uid)
	}
	return fmt.Sprintf("owned by uid %d, not by root or the effective user (uid %d)", st.Uid, euid)
}

// checkMode refuses a file or directory its group or others may write
// (a directory with the sticky bit, if sticky).
func checkMode(path string, fi fs.FileInfo, sticky bool) error {
	m := fi.Mode()
	if m.Perm()&0o022 == 0 || (sticky && m&fs.ModeSticky != 0) {
		return nil
	}
	return &Error{Path: path, Reason: fmt.Sprintf("writable by its group or others (mode %s)", m)}
}
