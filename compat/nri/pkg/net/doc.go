// Package net is upstream's pkg/net, written for compat/nri: connections
// from file descriptors (a launched plugin's end of its socket pair,
// NRI_PLUGIN_SOCKET), a listener that accepts one existing connection,
// and socket pairs. nrikit's own stub and runtime use nrikit's internal
// equivalents; this package is for the programs that call upstream's.
package net
