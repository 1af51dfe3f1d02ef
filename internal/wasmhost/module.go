package wasmhost

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// magic is the start of a WebAssembly binary module, version 1.
var magic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// IsModule reports whether the file at path starts with the WebAssembly
// magic and version 1 (`\0asm\x01\0\0\0`): how a plugin directory's entry
// is told to be a WASM plugin, whatever its name and mode. A file shorter
// than that is not a module; an error is returned only if the file cannot
// be read.
func IsModule(path string) (bool, error) {
	f, err := os.Open(path)
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
// there is none.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "nrikit", "wasm")
}
