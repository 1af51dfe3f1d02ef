//go:build linux && sparc64

package identity

// soPeerPIDFD is SO_PEERPIDFD (Linux 6.5) on sparc.
const soPeerPIDFD = 0x56
