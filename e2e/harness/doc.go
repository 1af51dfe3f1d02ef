// Package harness runs a real containerd or CRI-O for nrikit's end-to-end
// suite: it builds the pinned containerd, shim, ctr and crictl from the Go
// module proxy ([EnsureTools]), or CRI-O with its copyimg, pinns and NRI
// suite, as released or on nrikit's compat/nri ([EnsureCrio]), installs
// the Debian packages a runtime needs with apt-get when they are missing,
// writes the suite's images as OCI image layout tarballs ([WriteImages]),
// starts the runtime with NRI enabled in its own network namespace under a
// private directory ([NewContainerd], [NewCrio], [Runtime]), drives it
// through crictl ([CRI]), runs external plugins as processes
// ([StartProcess]) and inspects the containers' processes through /proc
// ([Environ], [Limits], [DeviceNode]).
//
// Everything it starts it also stops: [Runtime]'s Close removes the pods,
// stops the runtime, kills leftover shims, conmons and containers,
// unmounts what is left under the private directory and removes what the
// runtime left outside it (containerd's shim sockets).
//
// The harness needs root, util-linux's unshare and iproute2's ip
// ([Preflight] says what is missing). Nothing is ever pulled: the runtime
// runs with loopback only and its images are loaded locally.
package harness
