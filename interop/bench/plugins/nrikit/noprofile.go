//go:build !benchprofile

package main

import (
	"errors"
	"os"
)

// startProfile refuses BENCH_CPUPROFILE_DIR in a plugin built without the
// benchprofile tag (see profile.go), rather than running unprofiled.
func startProfile() (func(), error) {
	if os.Getenv("BENCH_CPUPROFILE_DIR") != "" {
		return nil, errors.New("BENCH_CPUPROFILE_DIR is set, but this plugin was built without the benchprofile tag")
	}
	return func() {}, nil
}
