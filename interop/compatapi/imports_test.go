package compatapi

// The upstream packages the test type-checks, imported so that this
// module's go.mod and go.sum keep what they need (go mod tidy).
import (
	_ "github.com/containerd/nri"
	_ "github.com/containerd/nri/pkg/adaptation"
	_ "github.com/containerd/nri/pkg/adaptation/builtin"
	_ "github.com/containerd/nri/pkg/api"
	_ "github.com/containerd/nri/pkg/log"
	_ "github.com/containerd/nri/pkg/net"
	_ "github.com/containerd/nri/pkg/net/multiplex"
	_ "github.com/containerd/nri/pkg/plugin"
	_ "github.com/containerd/nri/pkg/runtime-tools/generate"
	_ "github.com/containerd/nri/pkg/stub"
	_ "github.com/containerd/nri/pkg/version"
	_ "github.com/containerd/nri/plugins/default-validator"
	_ "github.com/containerd/nri/plugins/default-validator/builtin"
	_ "github.com/containerd/nri/types/v1"
)
