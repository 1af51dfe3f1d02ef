// Package nrikitstub tests plugins written with nrikit's stub against
// containerd/nri v0.12.5's runtime (pkg/adaptation), as pre-installed and
// as external plugins, each in its own process.
package nrikitstub
