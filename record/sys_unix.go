//go:build unix

package record

import "syscall"

// noFollow refuses to open a symbolic link as the last path element: a
// recording or key path swapped for a link cannot redirect a write.
const noFollow = syscall.O_NOFOLLOW
