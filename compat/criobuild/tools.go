//go:build tools

// Package criobuild builds CRI-O v1.36.3 with nrikit's runtime library in
// place of upstream's NRI module (see docs/crio.md and docs/embedding.md):
//
//	cd compat/criobuild && go build -tags "$CRIO_TAGS" github.com/cri-o/cri-o/cmd/crio
//
// with the build tags CRI-O's Makefile uses (containers_image_openpgp
// containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion
// seccomp; libseccomp's headers must be installed), and builds CRI-O's own
// NRI test suite, test/nri, with its plugins on compat/nri's stub:
//
//	go test -c -o nri.test github.com/cri-o/cri-o/test/nri
//
// testify is imported for that suite, whose tests need it: module graph
// pruning would otherwise leave it out of go.sum.
package criobuild

import (
	_ "github.com/cri-o/cri-o/cmd/crio"
	_ "github.com/stretchr/testify/require"
)
