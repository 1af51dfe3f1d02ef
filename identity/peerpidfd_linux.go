//go:build linux && !sparc64

package identity

// soPeerPIDFD is SO_PEERPIDFD (Linux 6.5), asm-generic's number.
const soPeerPIDFD = 77
