// Package cri checks a live runtime's side of the NRI contract through
// CRI: the checker behind `nri check runtime --cri-socket`.
//
// Run connects plugins to the runtime's NRI socket and drives the same
// runtime through its CRI socket, as the kubelet would, with pods and
// containers of a local image the user names (never pulled). Each entry
// of the table that Checks returns is one check: what it is called, what
// it needs beyond the two sockets and the image, and how it decides. A
// check makes its own pods, containers and plugins, is bounded in time,
// and removes what it made whatever its verdict; the checks that hold a
// hook (an NRI request the plugin answers late, always before the
// runtime's request timeout, which the checker reads from Configure) run
// one at a time, the others in parallel. A check whose need is not met
// (ExecSync, the runtime's PID namespace, a pod network, a CDI device) is
// reported SKIP with the reason; a run ends with a sweep that reports any
// pod of the run still listed.
//
// The checker's plugins answer events about pods and containers that are
// not the check's own at once and without changes, so that running the
// checker on a node does not touch its workloads.
package cri
