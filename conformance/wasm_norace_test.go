//go:build !race

package conformance

// raceEnabled is set when the race detector is on.
const raceEnabled = false
