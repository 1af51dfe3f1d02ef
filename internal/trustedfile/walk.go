package trustedfile

import (
	"io/fs"
)

// CheckPath checks the file at path for a use by its path (an exec): the
// file, reached through symbolic links, is trusted (see [Open]; any
// size), and so is the way to it from the root (see [CheckDir]), so
// that only root and the effective user can change what path names. It
// returns the path resolved (without symbolic links) and the file's
// information. A rule broken is an [*Error].
func CheckPath(path string) (string, fs.FileInfo, error) {
	real, fi, err := walk(path)
	if err != nil {
		return "", nil, err
	}
	if err := checkFile(real, fi, -1, true); err != nil {
		return "", nil, err
	}
	return real, fi, nil
}

// CheckDir checks the trusted directory at path: a directory, reached
// through symbolic links, owned by root or the effective user and not
// writable by its group or others; every directory on the way to it
// from the root is owned by root or the effective user and not
// writable by its group or others unless it has the sticky bit; every
// symbolic link followed is owned by root or the effective user. It
// returns the path resolved. A rule broken is an [*Error].
func CheckDir(path string) (string, error) {
	return checkDir(path, false)
}

// CheckParent checks the directory at path as a directory on the way to
// a trusted directory (see [CheckDir]; it may be writable by others if
// it has the sticky bit): a trusted directory can be made in it. It
// returns the path resolved.
func CheckParent(path string) (string, error) {
	return checkDir(path, true)
}

func checkDir(path string, sticky bool) (string, error) {
	real, fi, err := walk(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", &Error{Path: real, Reason: "a " + typeName(fi.Mode()) + ", not a directory"}
	}
	if err := checkOwner(real, fi); err != nil {
		return "", err
	}
	if err := checkMode(real, fi, sticky); err != nil {
		return "", err
	}
	return real, nil
}
