// Package cluster is nrikit's test on a real Kubernetes node: kine,
// kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet
// (k8s.io/kubernetes v1.37.2, built by the module e2e/kubebuild from the Go
// module proxy and kept in the user cache directory) with containerd
// v2.4.2 built on nrikit (compat/nri) as the node's runtime, all in a
// network and mount namespace of their own. The plugins are deployed as
// operators deploy them: `kubectl apply -k deploy/kustomize/overlays/...`
// with images built by deploy/images and imported into containerd (never
// pulled), and each scenario checks what the kubelet, containerd and the
// containers' processes (/proc/PID) show.
//
// Run it with `make test-cluster` as root (see deploy/README.md, Tested on).
package cluster
