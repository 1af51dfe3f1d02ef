//go:build !nri_no_wasm && !linux

package wasmhost

import "io/fs"

// stampOf returns false: without a change time every check of a sealed
// entry reads and hashes it.
func stampOf(fs.FileInfo) (fileStamp, bool) { return fileStamp{}, false }
