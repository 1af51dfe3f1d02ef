'use strict';

// The NRI connection multiplexer (docs/protocol.md section 3): every frame
// on the socket is an 8-byte header (connection ID, payload length, both
// uint32 big-endian) followed by the payload. The payloads of one
// connection ID, concatenated, form that logical connection's byte stream.

const { ByteQueue } = require('./bytequeue');

const HEADER_SIZE = 8;
// 4 MiB of ttrpc data plus its 10-byte header.
const MAX_FRAME_PAYLOAD = 4 * 1024 * 1024 + 10;
// Connection IDs (docs/protocol.md 3.1).
const PLUGIN_SERVICE_CONN = 1;
const RUNTIME_SERVICE_CONN = 2;
// How many bytes are kept for a connection nobody has attached to yet.
const MAX_UNATTACHED_BYTES = 8 * 1024 * 1024;

// encodeFrames returns the frames that carry data on connection id: one
// header+payload Buffer per frame, each payload at most MAX_FRAME_PAYLOAD.
function encodeFrames(id, data) {
  const frames = [];
  let off = 0;
  do {
    const n = Math.min(data.length - off, MAX_FRAME_PAYLOAD);
    const frame = Buffer.allocUnsafe(HEADER_SIZE + n);
    frame.writeUInt32BE(id, 0);
    frame.writeUInt32BE(n, 4);
    data.copy(frame, HEADER_SIZE, off, off + n);
    frames.push(frame);
    off += n;
  } while (off < data.length);
  return frames;
}

// FrameDecoder turns the bytes read from the socket into (id, payload)
// frames. It throws on a header announcing more than MAX_FRAME_PAYLOAD,
// before it buffers any of that payload.
class FrameDecoder {
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.queue = new ByteQueue();
    this.header = null;
  }

  push(chunk) {
    this.queue.push(chunk);
    for (;;) {
      if (this.header === null) {
        if (this.queue.length < HEADER_SIZE) {
          return;
        }
        const h = this.queue.read(HEADER_SIZE);
        const id = h.readUInt32BE(0);
        const length = h.readUInt32BE(4);
        if (length > MAX_FRAME_PAYLOAD) {
          throw new Error(`mux: frame for connection ${id} announces ${length} bytes, more than the maximum ${MAX_FRAME_PAYLOAD}`);
        }
        this.header = { id, length };
      }
      if (this.queue.length < this.header.length) {
        return;
      }
      const { id, length } = this.header;
      this.header = null;
      this.onFrame(id, this.queue.read(length));
    }
  }
}

// Mux multiplexes logical connections over one stream socket.
// Events are reported through the callbacks given to the constructor:
// onError(err) for protocol errors (the socket is destroyed) and
// onClose() once the socket is closed.
class Mux {
  constructor(socket, { onClose = () => {}, onError = () => {}, log = () => {} } = {}) {
    this.socket = socket;
    this.conns = new Map();
    this.unattached = new Map();
    this.closed = false;
    this.log = log;
    this.decoder = new FrameDecoder((id, payload) => this.dispatch(id, payload));
    socket.on('data', (chunk) => {
      try {
        this.decoder.push(chunk);
      } catch (err) {
        onError(err);
        socket.destroy();
      }
    });
    socket.on('error', (err) => onError(err));
    socket.on('close', () => {
      this.closed = true;
      for (const conn of this.conns.values()) {
        conn.onClose();
      }
      onClose();
    });
  }

  // attach registers the receiver of connection id's bytes, conn =
  // {onData(buf), onClose()}, and hands it what arrived for id before.
  attach(id, conn) {
    if (id === 0) {
      throw new Error('mux: connection ID 0 is reserved');
    }
    this.conns.set(id, conn);
    const pending = this.unattached.get(id);
    if (pending) {
      this.unattached.delete(id);
      for (const buf of pending.bufs) {
        conn.onData(buf);
      }
    }
  }

  // write sends data on connection id; it returns false once the socket is
  // closed. Frames of one write are queued together, so they are never
  // interleaved with frames of another write.
  write(id, data) {
    if (this.closed || this.socket.destroyed) {
      return false;
    }
    this.socket.write(Buffer.concat(encodeFrames(id, data)));
    return true;
  }

  dispatch(id, payload) {
    if (payload.length === 0) {
      return;
    }
    const conn = this.conns.get(id);
    if (conn) {
      conn.onData(payload);
      return;
    }
    if (id === 0) {
      this.log(`mux: dropping ${payload.length} bytes sent on reserved connection 0`);
      return;
    }
    let pending = this.unattached.get(id);
    if (!pending) {
      pending = { bufs: [], size: 0 };
      this.unattached.set(id, pending);
    }
    if (pending.size + payload.length > MAX_UNATTACHED_BYTES) {
      this.log(`mux: dropping ${payload.length} bytes for unknown connection ${id}`);
      return;
    }
    pending.bufs.push(payload);
    pending.size += payload.length;
  }

  // end closes the socket after the queued frames are written.
  end() {
    this.socket.end();
  }

  // destroy closes the socket at once.
  destroy() {
    this.socket.destroy();
  }
}

module.exports = {
  Mux,
  FrameDecoder,
  encodeFrames,
  HEADER_SIZE,
  MAX_FRAME_PAYLOAD,
  PLUGIN_SERVICE_CONN,
  RUNTIME_SERVICE_CONN,
};
