//go:build !unix

package trustedfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// walk resolves path; the way is not checked (see the package
// documentation).
func walk(path string) (string, fs.FileInfo, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", nil, err
	}
	fi, err := os.Stat(real)
	return real, fi, err
}
