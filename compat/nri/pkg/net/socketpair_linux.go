package net

import "syscall"

// socketPairCloexec creates the pair close-on-exec atomically.
func socketPairCloexec() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
