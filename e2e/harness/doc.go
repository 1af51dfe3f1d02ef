// Package harness runs a real containerd for nrikit's end-to-end suite:
// it builds the pinned containerd, shim, ctr and crictl from the Go module
// proxy ([EnsureTools]), writes the suite's images as an OCI image layout
// tarball ([WriteImages]), starts containerd with NRI enabled in its own
// network namespace under a private directory ([New], [Containerd.Start]),
// drives it through crictl ([CRI]), runs external plugins as processes
// ([StartProcess]) and inspects the containers' processes through /proc
// ([Environ], [Limits], [DeviceNode]).
//
// Everything it starts it also stops: [Containerd.Close] removes the pods,
// stops containerd, kills leftover shims and containers, unmounts what is
// left under the private directory and removes the shims' sockets.
//
// The harness needs root, util-linux's unshare and iproute2's ip
// ([Preflight] says what is missing). Nothing is ever pulled: containerd
// runs with loopback only and its sandbox image is imported locally.
package harness
