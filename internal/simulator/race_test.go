//go:build race

package simulator

// raceEnabled is set when the race detector is on.
const raceEnabled = true
