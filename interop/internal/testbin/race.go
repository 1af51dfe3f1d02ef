//go:build race

package testbin

// Race is set when the race detector is on.
const Race = true
