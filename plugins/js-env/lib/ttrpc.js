'use strict';

// ttrpc over one logical connection (docs/protocol.md section 4): each
// message is a 10-byte header (data length uint32 BE, stream ID uint32 BE,
// message type, flags) followed by the data, a protobuf ttrpc.Request or
// ttrpc.Response. NRI uses unary calls only.

const { ByteQueue } = require('./bytequeue');

const MESSAGE_HEADER_SIZE = 10;
const MAX_MESSAGE_DATA = 4 * 1024 * 1024;
const TYPE_REQUEST = 0x01;
const TYPE_RESPONSE = 0x02;
// How decoded protobuf messages are turned into plain objects: 64-bit
// integers and enums as numbers, repeated fields always present.
const DECODE_OPTIONS = Object.freeze({ longs: Number, enums: Number, defaults: false, arrays: true });

// gRPC status codes used by NRI peers (docs/protocol.md 4.3).
const Code = Object.freeze({
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
});

// RpcError is an error with a gRPC status code: thrown by handlers to
// choose the code of their error answer, and returned to callers for error
// answers from the peer.
class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
  }
}

function encodeMessage(streamId, type, flags, data) {
  const out = Buffer.allocUnsafe(MESSAGE_HEADER_SIZE + data.length);
  out.writeUInt32BE(data.length, 0);
  out.writeUInt32BE(streamId, 4);
  out.writeUInt8(type, 8);
  out.writeUInt8(flags, 9);
  Buffer.from(data.buffer, data.byteOffset, data.length).copy(out, MESSAGE_HEADER_SIZE);
  return out;
}

// MessageDecoder turns a logical connection's bytes into ttrpc messages.
// A message announcing more than MAX_MESSAGE_DATA is discarded without
// being buffered and reported with oversized=true, so that a request can
// be answered with RESOURCE_EXHAUSTED and the stream stays in sync.
class MessageDecoder {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.queue = new ByteQueue();
    this.header = null;
    this.discard = 0;
  }

  push(chunk) {
    this.queue.push(chunk);
    for (;;) {
      if (this.header === null) {
        if (this.queue.length < MESSAGE_HEADER_SIZE) {
          return;
        }
        const h = this.queue.read(MESSAGE_HEADER_SIZE);
        this.header = {
          length: h.readUInt32BE(0),
          streamId: h.readUInt32BE(4),
          type: h.readUInt8(8),
          flags: h.readUInt8(9),
        };
        this.discard = this.header.length > MAX_MESSAGE_DATA ? this.header.length : 0;
      }
      const hdr = this.header;
      if (this.discard > 0) {
        this.discard -= this.queue.skip(this.discard);
        if (this.discard > 0) {
          return;
        }
        this.header = null;
        this.onMessage({ ...hdr, data: null, oversized: true });
        continue;
      }
      if (this.queue.length < hdr.length) {
        return;
      }
      this.header = null;
      this.onMessage({ ...hdr, data: this.queue.read(hdr.length), oversized: false });
    }
  }
}

// Endpoint is the ttrpc client and server of one logical connection.
//   types:    { Request, Response } protobufjs types (ttrpc.proto)
//   send:     function(Buffer) writing bytes on the logical connection
//   services: { [serviceName]: { [method]: { requestType, responseType, handler } } }
//             handler(requestObject, call) returns (a Promise of) the response object.
class Endpoint {
  constructor({ types, send, services = {}, log = () => {} }) {
    this.types = types;
    this.send = send;
    this.services = services;
    this.log = log;
    this.nextStreamId = 1;
    this.pending = new Map();
    this.closed = false;
    this.decoder = new MessageDecoder((msg) => this.handleMessage(msg));
  }

  // onData feeds bytes received on the logical connection.
  onData(chunk) {
    this.decoder.push(chunk);
  }

  // onClose fails every outstanding call: the connection is gone.
  onClose() {
    this.closed = true;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new RpcError(Code.UNAVAILABLE, `ttrpc: connection closed before ${p.name} was answered`));
    }
  }

  // call invokes /service/method with request (a plain object of
  // requestType) and resolves to the decoded response object. timeoutMs > 0
  // is sent as the request's deadline (timeout_nano) and, unless
  // enforce=false (the caller keeps its own watchdog), enforced locally.
  call(service, method, requestType, responseType, request, timeoutMs, { enforce = true } = {}) {
    const name = `/${service}/${method}`;
    if (this.closed) {
      return Promise.reject(new RpcError(Code.UNAVAILABLE, `ttrpc: connection closed, cannot call ${name}`));
    }
    const streamId = this.nextStreamId;
    this.nextStreamId += 2;
    const payload = requestType.encode(requestType.fromObject(request)).finish();
    const req = this.types.Request.fromObject({
      service,
      method,
      payload,
      timeout_nano: timeoutMs > 0 ? timeoutMs * 1e6 : 0,
    });
    const data = this.types.Request.encode(req).finish();
    return new Promise((resolve, reject) => {
      const entry = { name, responseType, resolve, reject, timer: null };
      if (timeoutMs > 0 && enforce) {
        entry.timer = setTimeout(() => {
          this.pending.delete(streamId);
          reject(new RpcError(Code.DEADLINE_EXCEEDED, `ttrpc: ${name} not answered within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(streamId, entry);
      this.send(encodeMessage(streamId, TYPE_REQUEST, 0, data));
    });
  }

  handleMessage(msg) {
    switch (msg.type) {
      case TYPE_REQUEST:
        this.handleRequest(msg);
        break;
      case TYPE_RESPONSE:
        this.handleResponse(msg);
        break;
      default:
        this.log(`ttrpc: ignoring message of type ${msg.type} on stream ${msg.streamId}`);
    }
  }

  handleResponse(msg) {
    const p = this.pending.get(msg.streamId);
    if (!p) {
      this.log(`ttrpc: ignoring response for unknown stream ${msg.streamId}`);
      return;
    }
    this.pending.delete(msg.streamId);
    clearTimeout(p.timer);
    if (msg.oversized) {
      p.reject(new RpcError(Code.RESOURCE_EXHAUSTED, `ttrpc: response to ${p.name} exceeds ${MAX_MESSAGE_DATA} bytes`));
      return;
    }
    let resp;
    try {
      resp = this.types.Response.decode(msg.data);
    } catch (err) {
      p.reject(new RpcError(Code.UNKNOWN, `ttrpc: cannot decode response to ${p.name}: ${err.message}`));
      return;
    }
    if (resp.status && resp.status.code !== 0) {
      p.reject(new RpcError(resp.status.code, resp.status.message));
      return;
    }
    try {
      const out = p.responseType.decode(resp.payload || Buffer.alloc(0));
      p.resolve(p.responseType.toObject(out, DECODE_OPTIONS));
    } catch (err) {
      p.reject(new RpcError(Code.UNKNOWN, `ttrpc: cannot decode ${p.responseType.name}: ${err.message}`));
    }
  }

  async handleRequest(msg) {
    const respond = (status, payload) => {
      const resp = this.types.Response.fromObject(status ? { status } : { payload });
      const data = this.types.Response.encode(resp).finish();
      if (!this.closed) {
        this.send(encodeMessage(msg.streamId, TYPE_RESPONSE, 0, data));
      }
    };
    if (msg.oversized) {
      respond({ code: Code.RESOURCE_EXHAUSTED, message: `message length ${msg.length} exceeds the maximum ${MAX_MESSAGE_DATA}` });
      return;
    }
    let req;
    try {
      req = this.types.Request.decode(msg.data);
    } catch (err) {
      respond({ code: Code.INVALID_ARGUMENT, message: `cannot decode ttrpc request: ${err.message}` });
      return;
    }
    const service = this.services[req.service];
    if (!service) {
      respond({ code: Code.UNIMPLEMENTED, message: `service ${req.service} is not implemented` });
      return;
    }
    const m = Object.prototype.hasOwnProperty.call(service, req.method) ? service[req.method] : null;
    if (!m) {
      respond({ code: Code.UNIMPLEMENTED, message: `method /${req.service}/${req.method} is not implemented` });
      return;
    }
    try {
      const arg = m.requestType.toObject(m.requestType.decode(req.payload || Buffer.alloc(0)), DECODE_OPTIONS);
      const result = await m.handler(arg, { service: req.service, method: req.method });
      const payload = m.responseType.encode(m.responseType.fromObject(result || {})).finish();
      respond(null, payload);
    } catch (err) {
      const code = err instanceof RpcError ? err.code : Code.UNKNOWN;
      respond({ code, message: err && err.message ? err.message : String(err) });
    }
  }
}

module.exports = {
  Endpoint,
  MessageDecoder,
  RpcError,
  Code,
  encodeMessage,
  MESSAGE_HEADER_SIZE,
  MAX_MESSAGE_DATA,
  TYPE_REQUEST,
  TYPE_RESPONSE,
};
