//go:build !race

package chaos

// raceEnabled is set when the race detector is on: the heaviest tests
// then do less.
const raceEnabled = false
