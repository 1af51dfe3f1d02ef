package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// hashChunk is how much hashFile reads between checks of its deadline.
const hashChunk = 1 << 20

// hashFile returns "sha256:HEX" of f, which is size bytes long, reading
// it within the bounds of opts and ctx: the deadline is checked between
// reads of hashChunk, a file that turns out longer than size (or than
// the limit) is refused.
func hashFile(ctx context.Context, f io.Reader, size int64, opts *InspectOptions) (string, error) {
	deadline := time.Now().Add(opts.hashTimeout())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	h := sha256.New()
	buf := make([]byte, hashChunk)
	limit := min(size, opts.maxSize())
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("not hashed: %w", err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("not hashed within %v", opts.hashTimeout())
		}
		m, err := f.Read(buf)
		n += int64(m)
		if n > limit {
			return "", errors.New("grew while it was read: not hashed")
		}
		h.Write(buf[:m])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// fileKey names a version of a file: an executable's content cannot
// change without its change time (or size, or inode) changing, short of
// root setting the clock back.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// DigestCache remembers the digests of the last executables hashed, so
// that a plugin reconnecting, or many connections of one program, cost
// one hash. The nil *DigestCache caches nothing. Safe for concurrent use.
type DigestCache struct {
	mu    sync.Mutex
	size  int
	m     map[fileKey]string
	order []fileKey // oldest first
}

// NewDigestCache returns a cache of the digests of at most n files.
func NewDigestCache(n int) *DigestCache {
	return &DigestCache{size: max(n, 1), m: map[fileKey]string{}}
}

// digest returns the cached digest of key, or compute's, which it
// caches if compute succeeds.
func (c *DigestCache) digest(key fileKey, compute func() (string, error)) (string, error) {
	if c == nil {
		return compute()
	}
	c.mu.Lock()
	d, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := compute()
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.order) == c.size {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.m[key] = d
		c.order = append(c.order, key)
	}
	return d, nil
}
