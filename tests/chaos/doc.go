// Package chaos is the fault-containment test suite of nrikit (issue 13):
// it checks, with real plugin processes, that a frozen, slow or hostile
// plugin never stalls the runtime nor grows its memory without bound, and
// that it is the faulty plugin, and only it, that is blamed and handled by
// its failure policy. The package has no code of its own; everything is
// in its tests, run by `go test -race ./tests/chaos/` (and so by CI).
//
// # How the suite works
//
// The runtime is an [github.com/nrikit/nrikit/adaptation.Adaptation]
// embedded in the test process, listening on a unix socket in a short
// temporary directory, with an in-memory pod and container store behind
// its ListFunc and UpdateFunc, a logger that captures every record, and
// short timeouts (request timeout 500 ms) so that a fault shows within a
// second. Plugins are the test binary re-executed (TestHelperProcess,
// selected by an environment variable) in one of these modes:
//
//   - "stub": a well-behaved plugin built with package stub that adjusts
//     created containers (an environment variable) and reports what it
//     sees on stdout;
//   - "churn": stub-based plugins connecting, registering, synchronizing
//     and disconnecting in a loop, under distinct names or under one name;
//   - "raw": a plugin speaking the protocol directly with package mux,
//     ttrpc and package api, so that it can misbehave exactly: stop
//     reading its socket after registering, answer Synchronize slowly,
//     pipeline thousands of UpdateContainers requests written as raw
//     ttrpc frames without reading the answers, answer CreateContainer
//     with a ~3.9 MB adjustment, or register with a 1 MiB name;
//   - "unopened": several connections sending 4 MiB frames for connection
//     IDs that NRI never opens.
//
// A frozen plugin is a stub-based one stopped with SIGSTOP.
//
// # What is asserted
//
// Each test asserts behaviour, never measured figures: a call involving
// the faulty plugin returns within a bound derived from the configured
// timeouts, with generous slack (typically twice the request timeout);
// calls not involving it succeed with the healthy plugins' adjustments;
// errors name the faulty plugin; memory stays under a documented bound
// (the runtime's heap after runtime.GC); and the goroutines and open file
// descriptors of the test process return to their baseline once the
// plugin is gone and at the end of every test (go.uber.org/goleak and
// /proc/self/fd). The plugin processes run with the race detector too;
// a data race reported by one of them fails the test.
//
// The tests run one after the other (they measure process-wide
// quantities) and take a few seconds each.
package chaos
