package trustedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Error is a file or directory refused by a rule. Its message names the
// path and the reason, such as "/etc/nri/conf.d/10-x.conf: writable by
// its group or others (mode -rw-rw-r--)".
type Error struct {
	// Path is the file or directory refused (a directory on the way to
	// the path checked, or the file a symbolic link leads to, if that is
	// what breaks a rule).
	Path string
	// Reason says which rule it breaks.
	Reason string
}

// Error returns "path: reason".
func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// Open opens the trusted file at path for reading and returns it with
// its information, taken from the open descriptor: a regular file of at
// most max bytes (max < 0: any size), owned by root or the effective
// user, not writable by its group or others. A file that breaks a rule
// is refused with an [*Error]. The descriptor is not inheritable.
func Open(path string, max int64) (*os.File, fs.FileInfo, error) {
	return open(path, max, true)
}

// OpenRegular is [Open] without the owner and mode rules: the file is a
// regular file of at most max bytes (max < 0: any size), opened without
// blocking. It is for files a user names themselves, such as a module
// given on a command line.
func OpenRegular(path string, max int64) (*os.File, fs.FileInfo, error) {
	return open(path, max, false)
}

// open opens path without blocking and checks the descriptor. A path
// that does not lead to a regular file is refused before it is opened,
// so that no device is opened; the descriptor is checked again, as the
// path may have changed in between.
func open(path string, max int64, owned bool) (*os.File, fs.FileInfo, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if err := checkRegular(path, fi); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkFile(path, fi, max, owned)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadAll reads f to its end, at most max bytes (max < 0: no limit); a
// file that turns out longer (it grew after it was checked) is refused
// with an [*Error]. The buffer is sized from f's size, so a file that
// did not change is read into one allocation of its size (io.ReadAll
// would grow a buffer from 512 bytes: for a module of 7.6 MB, 15
// allocations and 15 MB copied).
func ReadAll(f *os.File, max int64) ([]byte, error) {
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		size = fi.Size()
	}
	if max >= 0 {
		size = min(size, max)
	}
	b := make([]byte, 0, size+1) // +1: the read that sees the end needs room
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if max >= 0 && int64(len(b)) > max {
			return nil, &Error{Path: f.Name(), Reason: fmt.Sprintf("longer than the limit of %d bytes", max)}
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadFile reads the trusted file at path (see [Open]), at most max
// bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, _, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, max)
}

// IsUntrusted reports whether err is, or wraps, an [*Error].
func IsUntrusted(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// checkRegular refuses anything but a regular file.
func checkRegular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return &Error{Path: path, Reason: "a " + typeName(fi.Mode()) + ", not a regular file"}
}

// checkFile applies the file rules to fi, the information of path.
func checkFile(path string, fi fs.FileInfo, max int64, owned bool) error {
	if err := checkRegular(path, fi); err != nil {
		return err
	}
	if max >= 0 && fi.Size() > max {
		return &Error{Path: path, Reason: fmt.Sprintf("%d bytes, over the limit of %d", fi.Size(), max)}
	}
	if !owned {
		return nil
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	return checkMode(path, fi, false)
}

// typeName names the type of a file mode.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeIrregular != 0:
		return "file of unknown type"
	}
	return "regular file"
}
