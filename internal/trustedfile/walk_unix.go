//go:build unix

package trustedfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symbolic links followed on one path (as Linux
// does).
const maxLinks = 40

// walk resolves path one name at a time from the root, checking the way:
// every directory passed through is owned by root or the effective user
// and not writable by its group or others unless sticky, every symbolic
// link followed is owned by root or the effective user. It returns the
// path resolved and the information of what it names (which is not a
// symbolic link), unchecked.
func walk(path string) (string, fs.FileInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	cur := "/"
	fi, err := os.Lstat(cur)
	if err != nil {
		return "", nil, err
	}
	if err := checkWay(cur, fi); err != nil {
		return "", nil, err
	}
	rest := strings.Split(abs, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if r := ownerReason(fi); r != "" {
				return "", nil, &Error{Path: next, Reason: "a symbolic link " + r}
			}
			if links++; links > maxLinks {
				return "", nil, &Error{Path: path, Reason: fmt.Sprintf("more than %d symbolic links", maxLinks)}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", nil, err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		cur = next
		if !more(rest) {
			break
		}
		if err := checkWay(cur, fi); err != nil {
			return "", nil, err
		}
	}
	fi, err = os.Lstat(cur)
	if err != nil {
		return "", nil, err
	}
	return cur, fi, nil
}

// more reports whether names hold a name that moves (not "" or ".").
func more(names []string) bool {
	for _, n := range names {
		if n != "" && n != "." {
			return true
		}
	}
	return false
}

// checkWay checks a directory passed through.
func checkWay(path string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return &Error{Path: path, Reason: "a " + typeName(fi.Mode()) + ", not a directory"}
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	return checkMode(path, fi, true)
}
