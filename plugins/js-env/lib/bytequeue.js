'use strict';

// ByteQueue accumulates incoming chunks of a byte stream and hands out
// exact-length pieces of it without concatenating everything received so
// far on every chunk.
class ByteQueue {
  constructor() {
    this.chunks = [];
    this.length = 0;
  }

  // push appends a chunk (a Buffer) to the end of the queue.
  push(chunk) {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.length += chunk.length;
    }
  }

  // read removes and returns the first n bytes; the caller makes sure that
  // n <= this.length.
  read(n) {
    if (n > this.length) {
      throw new RangeError(`ByteQueue: read(${n}) with only ${this.length} bytes queued`);
    }
    if (n === 0) {
      return Buffer.alloc(0);
    }
    const first = this.chunks[0];
    if (first.length >= n) {
      this.consumeFirst(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    while (off < n) {
      const c = this.chunks[0];
      const take = Math.min(c.length, n - off);
      c.copy(out, off, 0, take);
      off += take;
      this.consumeFirst(take);
    }
    return out;
  }

  // skip drops up to n bytes from the front and returns how many it dropped.
  skip(n) {
    let dropped = 0;
    while (dropped < n && this.chunks.length > 0) {
      const take = Math.min(this.chunks[0].length, n - dropped);
      this.consumeFirst(take);
      dropped += take;
    }
    return dropped;
  }

  consumeFirst(n) {
    const first = this.chunks[0];
    if (n === first.length) {
      this.chunks.shift();
    } else {
      this.chunks[0] = first.subarray(n);
    }
    this.length -= n;
  }
}

module.exports = { ByteQueue };
