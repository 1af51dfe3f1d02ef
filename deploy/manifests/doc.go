// Package manifests holds the test of the Kubernetes manifests in
// deploy/kustomize: it renders every overlay with kustomize's library,
// decodes every object strictly into the k8s.io/api types (an unknown or
// misspelt field fails) and checks what deploy/README.md promises of every
// plugin DaemonSet, its NetworkPolicy and its configuration (Trust), and
// of the release overlays. [PinImages] (cmd/pin-images, `make
// pin-images`) writes the digests of the images `make images` built into
// the release overlays. It is a separate module so that the main module
// gains no dependency; run the test with `make test-manifests`.
package manifests
