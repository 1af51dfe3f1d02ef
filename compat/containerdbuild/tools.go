//go:build tools

// Package containerdbuild builds containerd v2.4.2 with nrikit's runtime
// library in place of upstream's NRI module (see docs/embedding.md):
//
//	cd compat/containerdbuild && go build -o containerd github.com/containerd/containerd/v2/cmd/containerd
//
// and runs containerd's own NRI unit tests against it:
//
//	go test github.com/containerd/containerd/v2/internal/nri/... github.com/containerd/containerd/v2/internal/cri/nri/...
package containerdbuild

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
)
