package mux

import (
	"math/bits"
	"sync"
)

// Frame payload buffers up to maxPooledFrame bytes are recycled through
// size-class pools once a logical connection has consumed them, so that
// steady traffic does not allocate (and page-fault in) fresh memory for
// every frame. Class i holds buffers of capacity minPooledFrame<<i.
const (
	minPooledFrameShift = 9 // 512 bytes
	maxPooledFrameShift = 16
	maxPooledFrame      = 1 << maxPooledFrameShift // 64 KiB
)

var framePools [maxPooledFrameShift - minPooledFrameShift + 1]sync.Pool

// poolClass returns the pool index for a buffer of n bytes (n <= maxPooledFrame).
func poolClass(n int) int {
	if n <= 1<<minPooledFrameShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minPooledFrameShift
}

// getFrame returns a buffer of length n, recycled when possible.
func getFrame(n int) []byte {
	if n > maxPooledFrame {
		return make([]byte, n)
	}
	class := poolClass(n)
	if p, ok := framePools[class].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(class+minPooledFrameShift))
}

// putFrame recycles a buffer obtained from getFrame. The caller must not
// use b afterwards.
func putFrame(b []byte) {
	c := cap(b)
	if c > maxPooledFrame || c < 1<<minPooledFrameShift || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	framePools[poolClass(c)].Put(&b)
}
