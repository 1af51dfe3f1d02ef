// Package manifests holds the test of the Kubernetes manifests in
// deploy/kustomize: it renders every overlay with kustomize's library,
// decodes every object strictly into the k8s.io/api types (an unknown or
// misspelt field fails) and checks what deploy/README.md promises of every
// plugin DaemonSet. It is a separate module so that the main module gains
// no dependency; run it with `make test-manifests`.
package manifests
