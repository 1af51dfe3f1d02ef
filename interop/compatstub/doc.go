// Package compatstub runs one plugin, written as upstream's example
// plugins are against containerd/nri v0.12.5's pkg/stub and using every
// handler interface (testdata/plugin), built twice: on upstream's module
// and on compat/nri (package internal/consumer), launched by a fake
// runtime as runtimes launch plugins; it compares what the two builds do
// where a plugin can see it: the OnClose hook and Run's result when the
// connection ends, the name and index from the environment and options,
// UpdateContainers before Start.
package compatstub
