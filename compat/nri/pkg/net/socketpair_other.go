//go:build !unix

package net

import "errors"

// socketPairCloexec fails: socket pairs are a unix facility (upstream's
// fails on windows too).
func socketPairCloexec() ([2]int, error) {
	return [2]int{-1, -1}, errors.New("socket pairs are not supported on this platform")
}
