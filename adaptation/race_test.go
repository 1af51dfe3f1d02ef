//go:build race

package adaptation

// raceEnabled is set when the race detector is on.
const raceEnabled = true
