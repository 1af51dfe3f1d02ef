package mux

import (
	"math/bits"
	"sync"
	"unsafe"
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

// framePools hold, per class, the first byte of each buffer (a pointer
// fits in an interface without an allocation, a slice does not); the
// class gives the capacity back.
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
	if p, ok := framePools[class].Get().(*byte); ok {
		return unsafe.Slice(p, 1<<(class+minPooledFrameShift))[:n]
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
	framePools[poolClass(c)].Put(unsafe.SliceData(b))
}
