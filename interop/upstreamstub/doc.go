// Package upstreamstub tests plugins written with containerd/nri
// v0.12.5's pkg/stub against nrikit's runtime (package adaptation), as
// pre-installed and as external plugins, each in its own process, and
// runs nrikit's plugin checker (package conformance) on such a plugin.
package upstreamstub
