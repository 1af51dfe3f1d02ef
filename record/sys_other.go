//go:build !unix

package record

import "os"

const (
	noFollow = 0
	nonBlock = 0
)

func ownedBySelf(os.FileInfo) bool { return true }
