//go:build !nri_no_wasm

package wasmhost

import (
	"io/fs"
	"syscall"
)

// stampOf returns fi's stamp, and whether the system gives one.
func stampOf(fi fs.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, false
	}
	return fileStamp{
		dev:   uint64(st.Dev), //nolint:unconvert // Dev's type differs between architectures
		ino:   st.Ino,
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}, true
}
