// Package filearg checks a file named on the nri command line before a
// command reads it, so that every command words a missing or unreadable
// file the same way and exits with the usage error's status for it (the
// file's content, once read, has its own mistakes and status).
package filearg

import (
	"errors"
	"io/fs"
	"os"
)

// Stat returns path's information, or what is wrong with it in words
// that follow its name ("no such file", or the system's reason).
func Stat(path string) (fs.FileInfo, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("no such file")
	case err != nil:
		return nil, errors.Unwrap(err)
	}
	return info, nil
}

// Check returns what is wrong with path as a file to read, in words that
// follow its name ("no such file", "a directory, not a file", "not
// readable: permission denied"), or nil.
func Check(path string) error {
	info, err := Stat(path)
	switch {
	case err != nil:
		return err
	case info.IsDir():
		return errors.New("a directory, not a file")
	}
	f, err := os.Open(path)
	if err != nil {
		return errors.New("not readable: " + errors.Unwrap(err).Error())
	}
	return f.Close()
}
