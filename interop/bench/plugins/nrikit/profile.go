//go:build benchprofile

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// startProfile starts profiling the plugin process's CPU into
// $BENCH_CPUPROFILE_DIR/<executable>.pprof when that is set (see
// docs/benchmarks.md); the returned function writes the profile, which
// happens when the runtime stops the plugin. Built only with the
// benchprofile tag, which the benchmark adds when it passes plugins that
// variable: a plugin built for measuring links no profiler, as
// upstream's does not.
func startProfile() (func(), error) {
	dir := os.Getenv("BENCH_CPUPROFILE_DIR")
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, filepath.Base(os.Args[0])+".pprof"))
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
