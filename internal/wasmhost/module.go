package wasmhost

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nrikit/nrikit/internal/trustedfile"
)

// DefaultMaxModuleSize caps the size of a module file ([Options.MaxModuleSize]):
// 64 MiB, eight times a Go guest's.
const DefaultMaxModuleSize = 64 << 20

// magic is the start of a WebAssembly binary module, version 1.
var magic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// IsModule reports whether the file at path starts with the WebAssembly
// magic and version 1 (`\0asm\x01\0\0\0`): how a plugin directory's entry
// is told to be a WASM plugin, whatever its name and mode. A file shorter
// than that is not a module; an error is returned if the file cannot be
// read or is not a regular file (it is opened without blocking, so a FIFO
// cannot hang it).
func IsModule(path string) (bool, error) {
	f, _, err := trustedfile.OpenRegular(path, -1)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(f, head); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		return false, err
	}
	return bytes.Equal(head, magic), nil
}

// DefaultCacheDir returns the compilation cache directory of the nri
// tool's commands: nrikit/wasm in the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache on Linux), or "" (no on-disk cache) if
// there is none. Whether it may be used is [CheckCacheDir]'s to say: under
// sudo -E it is the invoking user's, which root must not use.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "nrikit", "wasm")
}

// ToolCacheDir returns the compilation cache directory a command should
// use for the value dir of its --wasm-cache-dir flag: dir itself, unless
// it is the default ([DefaultCacheDir]) and [CheckCacheDir] refuses it
// (under sudo -E the default is the invoking user's): then "" (compiled
// modules kept in memory) and the reason, for the command to tell. A
// directory the user named is returned as it is; the cache refuses it,
// saying why.
func ToolCacheDir(dir string) (string, error) {
	if dir == "" || dir != DefaultCacheDir() {
		return dir, nil
	}
	if err := CheckCacheDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// CheckCacheDir checks that dir may hold a compilation cache, without
// creating it: the cache runs the machine code it finds there, so dir
// must be a trusted directory (internal/trustedfile: owned by root or the
// effective user, not writable by its group or others, and so the
// directories on the way to it, sticky ones such as /tmp excepted) and
// not a symbolic link. If dir does not exist, the nearest directory that
// does must be one it can be made in. A rule broken is a
// [*trustedfile.Error].
func CheckCacheDir(dir string) error {
	_, missing, err := checkCacheDir(dir)
	if err == nil && missing {
		return nil
	}
	return err
}

// prepareCacheDir checks dir (see CheckCacheDir), makes it (mode 0700)
// if missing and checks it again; it returns its absolute path.
func prepareCacheDir(dir string) (string, error) {
	abs, missing, err := checkCacheDir(dir)
	if err != nil || !missing {
		return abs, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", err
	}
	abs, _, err = checkCacheDir(abs)
	return abs, err
}

// checkCacheDir checks dir as a cache directory if it exists, else the
// nearest existing directory above it as its parent; it returns dir's
// absolute path (resolved if it exists) and whether it is missing.
func checkCacheDir(dir string) (string, bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(abs)
		for {
			if _, err := os.Lstat(parent); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
			parent = filepath.Dir(parent)
		}
		if _, err := trustedfile.CheckParent(parent); err != nil {
			return "", false, err
		}
		return abs, true, nil
	case err != nil:
		return "", false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", false, &trustedfile.Error{Path: abs, Reason: "a symbolic link (give the directory it leads to)"}
	}
	real, err := trustedfile.CheckDir(abs)
	if err != nil {
		return "", false, err
	}
	return real, false, nil
}

// readModule reads the module file, opened once (without blocking),
// checked through its descriptor (a regular file of at most max bytes;
// with trusted, owned by root or the effective user and not writable by
// its group or others) and read through a limit, and checks its magic.
// It returns the bytes and the file's mode.
func readModule(path string, max int64, trusted bool) ([]byte, fs.FileMode, error) {
	open := trustedfile.OpenRegular
	if trusted {
		open = trustedfile.Open
	}
	f, fi, err := open(path, max)
	if err != nil {
		return nil, 0, fmt.Errorf("wasmhost: %w", err)
	}
	defer f.Close()
	code, err := trustedfile.ReadAll(f, max)
	if err != nil {
		return nil, 0, fmt.Errorf("wasmhost: %w", err)
	}
	if !bytes.HasPrefix(code, magic) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotWasm, path)
	}
	return code, fi.Mode(), nil
}
