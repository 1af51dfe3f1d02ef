//go:build !race

package wasmtest

// RaceEnabled is set when the race detector is on.
const RaceEnabled = false
