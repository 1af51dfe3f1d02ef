// Package e2e is nrikit's end-to-end suite against a real containerd
// (v2.4.2) or a real CRI-O (v1.36.3, NRIKIT_E2E_CRI=crio), built from the
// Go module proxy as released or on nrikit's compat/nri
// (NRIKIT_E2E_RUNTIME=nrikit): nrikit's sample plugins, the template and
// the JavaScript plugin run as external and pre-installed NRI plugins of
// the runtime (the template also as a WASM module), real pods and
// containers are created with crictl, and each scenario checks both the
// OCI spec the runtime gave runc (`crictl inspect`) and the container's
// real process (/proc/PID). On CRI-O, CRI-O's own NRI suite (test/nri)
// runs too.
//
// Run it with `make test-e2e` and `make test-e2e-crio` from the repository
// root (root, unshare and ip needed; see docs/containerd.md and
// docs/crio.md). The infrastructure is in package harness; the scenarios
// are this package's tests.
package e2e
