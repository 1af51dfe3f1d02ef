//go:build race && !nri_no_wasm

package wasmhost

// raceEnabled is set when the race detector is on.
const raceEnabled = true
