package harness

import (
	"context"
	"io"
)

// checkPackages are the Debian packages the suite's run of `nri check
// runtime --cri-socket` needs on any runtime: busybox for its containers'
// image (sleep, and cat to look inside) and the CNI plugins for its pods'
// own network namespaces (--pod-network).
var checkPackages = []debianPackage{
	{"busybox-static", "/bin/busybox"},
	{"containernetworking-plugins", "/usr/lib/cni/bridge"},
}

// EnsureCheckPackages installs the packages of `nri check runtime
// --cri-socket` with apt-get if they are missing, and returns busybox's
// path.
func EnsureCheckPackages(ctx context.Context, log io.Writer) (string, error) {
	if err := ensurePackages(ctx, log, checkPackages...); err != nil {
		return "", err
	}
	return "/bin/busybox", nil
}
