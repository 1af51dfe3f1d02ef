// Package e2e is nrikit's end-to-end suite against a real containerd
// (v2.4.2, built from the Go module proxy): nrikit's sample plugins, the
// template and the JavaScript plugin run as external and pre-installed
// NRI plugins of containerd (the template also as a WASM module), real
// pods and containers are created with crictl, and each scenario checks
// both the OCI spec containerd gave runc (`crictl inspect`) and the
// container's real process (/proc/PID).
//
// Run it with `make test-e2e` from the repository root (root, unshare and
// ip needed; see docs/containerd.md). The infrastructure is in package
// harness; the scenarios are this package's tests.
package e2e
