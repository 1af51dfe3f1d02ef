'use strict';

// Unit and end-to-end tests of the js-env plugin: `node --test test/`.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const { Mux, FrameDecoder, encodeFrames, MAX_FRAME_PAYLOAD, PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN } = require('../lib/mux');
const { Endpoint, MessageDecoder, encodeMessage, RpcError, Code, MAX_MESSAGE_DATA } = require('../lib/ttrpc');
const { loadSchema, PLUGIN_SERVICE, RUNTIME_SERVICE } = require('../lib/schema');
const { subscribe, versionEvents, maskNames, inferNRIVersion, runtimeEvents } = require('../lib/events');
const { parseOptions, parseEnvLines } = require('../lib/config');

const schema = loadSchema();

test('RegisterPlugin is framed byte for byte as docs/protocol.md section 14 shows', () => {
  const sent = [];
  const ep = new Endpoint({ types: schema.ttrpc, send: (b) => sent.push(b) });
  ep.call(RUNTIME_SERVICE, 'RegisterPlugin', schema.nri('RegisterPluginRequest'), schema.nri('Empty'),
    { plugin_name: 'logger', plugin_idx: '10', NRI_version: 'v0.12.5' }, 5000).catch(() => {});
  ep.onClose();
  assert.strictEqual(sent.length, 1);
  const framed = Buffer.concat(encodeFrames(RUNTIME_SERVICE_CONN, sent[0]));
  const payload = Buffer.from('0a066c6f67676572120231301a0776302e31322e35', 'hex');
  const want = Buffer.concat([
    Buffer.from('00000002000000550000004b000000010100', 'hex'),
    Buffer.from([0x0a, 0x1c]), Buffer.from('nri.pkg.api.v1alpha1.Runtime'),
    Buffer.from([0x12, 0x0e]), Buffer.from('RegisterPlugin'),
    Buffer.from([0x1a, 0x15]), payload,
    Buffer.from('2080e497d012', 'hex'),
  ]);
  assert.strictEqual(framed.toString('hex'), want.toString('hex'));
});

test('the empty successful answer is 18 bytes as section 14 shows', () => {
  const resp = schema.ttrpc.Response.encode(schema.ttrpc.Response.fromObject({ payload: Buffer.alloc(0) })).finish();
  const framed = Buffer.concat(encodeFrames(RUNTIME_SERVICE_CONN, encodeMessage(1, 2, 0, resp)));
  assert.strictEqual(framed.toString('hex'), '000000020000000a00000000000000010200');
});

test('frames are reassembled across arbitrary chunk boundaries', () => {
  const got = [];
  const dec = new FrameDecoder((id, p) => got.push([id, p.toString()]));
  const bytes = Buffer.concat([...encodeFrames(1, Buffer.from('hello')), ...encodeFrames(2, Buffer.from('')), ...encodeFrames(2, Buffer.from('world'))]);
  for (const b of bytes) {
    dec.push(Buffer.from([b]));
  }
  assert.deepStrictEqual(got, [[1, 'hello'], [2, ''], [2, 'world']]);
});

test('a large write is split into frames of at most the maximum payload', () => {
  const frames = encodeFrames(1, Buffer.alloc(MAX_FRAME_PAYLOAD + 5));
  assert.deepStrictEqual(frames.map((f) => f.readUInt32BE(4)), [MAX_FRAME_PAYLOAD, 5]);
});

test('an oversized frame header is rejected before its payload arrives', () => {
  const dec = new FrameDecoder(() => assert.fail('no frame expected'));
  const h = Buffer.alloc(8);
  h.writeUInt32BE(1, 0);
  h.writeUInt32BE(MAX_FRAME_PAYLOAD + 1, 4);
  assert.throws(() => dec.push(h), /more than the maximum/);
});

test('an oversized ttrpc message is skipped and reported, the next one decoded', () => {
  const got = [];
  const dec = new MessageDecoder((m) => got.push(m));
  const h = Buffer.alloc(10);
  h.writeUInt32BE(MAX_MESSAGE_DATA + 1, 0);
  h.writeUInt32BE(3, 4);
  h.writeUInt8(1, 8);
  dec.push(h);
  dec.push(Buffer.alloc(MAX_MESSAGE_DATA + 1));
  dec.push(encodeMessage(5, 1, 0, Buffer.from('x')));
  assert.strictEqual(got.length, 2);
  assert.strictEqual(got[0].oversized, true);
  assert.strictEqual(got[0].streamId, 3);
  assert.strictEqual(got[1].data.toString(), 'x');
});

test('subscription follows supported_events, else the NRI version', () => {
  const create = 0x8;
  const update = 0x800;
  assert.strictEqual(subscribe(create | update, create, { supported_events: 0x3ff }).events, create);
  assert.strictEqual(subscribe(create | update, create, { NRI_version: 'v0.9.0' }).events, create);
  assert.strictEqual(subscribe(create | update, create, { NRI_version: 'v0.12.5' }).events, create | update);
  assert.strictEqual(subscribe(create | update, create, {}).events, create);
  assert.throws(() => subscribe(create, create, { supported_events: 0x1 }), /required events CreateContainer/);
  assert.strictEqual(versionEvents('garbage'), null);
  assert.strictEqual(versionEvents('v0.1.0'), null);
  assert.strictEqual(versionEvents('v0.10.0-rc.1'), 0x07ff);
  assert.strictEqual(versionEvents('v0.10.0-3-g0123abc'), 0x3fff);
  assert.strictEqual(versionEvents('0.11'), 0x3fff);
  assert.strictEqual(versionEvents('v0.9.1-0.20250219030224-e597e7849f24'), 0x1fff);
  assert.strictEqual(inferNRIVersion('containerd', 'v2.1.4'), 'v0.8.0');
  assert.strictEqual(inferNRIVersion('CRI-O', '1.33.2'), 'v0.9.1-0.20250219030224-e597e7849f24');
  assert.strictEqual(inferNRIVersion('containerd', 'v1.6.0'), null);
  assert.strictEqual(runtimeEvents({ runtime_name: 'containerd', runtime_version: 'v2.2.0', NRI_version: 'unknown' }).mask, 0x3fff);
  assert.strictEqual(runtimeEvents({ runtime_name: 'cri-o', runtime_version: '1.33.0' }).mask, 0x1fff);
  assert.strictEqual(runtimeEvents({ runtime_name: 'other' }).known, false);
  // Assumed event sets keep required events: the runtime decides.
  assert.strictEqual(subscribe(0x2000, 0x2000, { runtime_name: 'other' }).events, 0x2000);
  assert.throws(() => subscribe(0x2000, 0x2000, { NRI_version: 'v0.9.0' }), /required events ValidateContainerAdjustment/);
  assert.strictEqual(maskNames(0x1800), 'UpdatePodSandbox,PostUpdatePodSandbox');
});

test('options: flags override the environment, launched mode uses the fd', () => {
  const o = parseOptions(['--name', 'x', '--env', 'A=1', '--env=B=2'], { NRI_PLUGIN_NAME: 'y', NRI_PLUGIN_IDX: '07', NRI_PLUGIN_SOCKET: '3' });
  assert.strictEqual(o.name, 'x');
  assert.strictEqual(o.idx, '07');
  assert.strictEqual(o.fd, 3);
  assert.deepStrictEqual(o.env, [{ key: 'A', value: '1' }, { key: 'B', value: '2' }]);
  assert.deepStrictEqual(parseOptions([], {}).env, [{ key: 'JS_PLUGIN', value: 'hello' }]);
  assert.throws(() => parseOptions(['--idx', '1'], {}), /two digits/);
  assert.throws(() => parseOptions(['--name', 'a b'], {}), /invalid plugin name/);
  assert.throws(() => parseEnvLines('A=1\nA=2', 'cfg'), /twice/);
  assert.throws(() => parseEnvLines('-A=1', 'cfg'), /must not start/);
});

// fakeRuntime accepts one plugin on a unix socket and drives it the way
// nrikit's runtime does: RegisterPlugin is answered after Configure.
// It resolves {listening, connected}: listening once the socket is bound,
// connected (to the runtime's handle) once the plugin has connected.
function fakeRuntime(socketPath) {
  let listening = null;
  const connected = new Promise((resolve) => {
    const server = net.createServer((sock) => {
      server.close();
      const mux = new Mux(sock, {});
      const toPlugin = new Endpoint({ types: schema.ttrpc, send: (b) => mux.write(PLUGIN_SERVICE_CONN, b) });
      let registerReq = null;
      let answerRegister = null;
      const registered = new Promise((r) => { answerRegister = r; });
      const services = {
        [RUNTIME_SERVICE]: {
          RegisterPlugin: {
            requestType: schema.nri('RegisterPluginRequest'),
            responseType: schema.nri('Empty'),
            handler: async (req) => {
              registerReq = req;
              await registered;
              return {};
            },
          },
        },
      };
      const fromPlugin = new Endpoint({ types: schema.ttrpc, services, send: (b) => mux.write(RUNTIME_SERVICE_CONN, b) });
      mux.attach(PLUGIN_SERVICE_CONN, toPlugin);
      mux.attach(RUNTIME_SERVICE_CONN, fromPlugin);
      const call = (method, req, reqType, respType) => toPlugin.call(PLUGIN_SERVICE, method, schema.nri(reqType), schema.nri(respType), req, 5000);
      resolve({ mux, call, registerReq: () => registerReq, answerRegister, closed: new Promise((r) => sock.on('close', r)) });
    });
    listening = new Promise((r) => server.listen(socketPath, r));
  });
  return { listening, connected };
}

test('end to end against a fake runtime over a unix socket', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'js-env-'));
  const sock = path.join(dir, 'nri.sock');
  const { listening, connected } = fakeRuntime(sock);
  await listening;
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'plugin.js'), '--socket', sock, '--idx', '42', '--quiet'], { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  const rt = await connected;
  try {
    const conf = await rt.call('Configure', { runtime_name: 'fake', NRI_version: 'v0.12.5', registration_timeout: 5000, request_timeout: 2000, supported_events: 0x3fff, config: 'K=v' },
      'ConfigureRequest', 'ConfigureResponse');
    assert.strictEqual(conf.events, 0x8);
    assert.deepStrictEqual(rt.registerReq(), { plugin_name: 'js-env', plugin_idx: '42', NRI_version: 'v0.12.5' });
    rt.answerRegister();
    const s1 = await rt.call('Synchronize', { pods: [{ id: 'p' }], more: true }, 'SynchronizeRequest', 'SynchronizeResponse');
    assert.strictEqual(s1.more, true);
    const s2 = await rt.call('Synchronize', { containers: [{ id: 'c' }] }, 'SynchronizeRequest', 'SynchronizeResponse');
    assert.ok(!s2.more);
    const cc = await rt.call('CreateContainer', { pod: { id: 'p' }, container: { id: 'c2', pod_sandbox_id: 'p' } }, 'CreateContainerRequest', 'CreateContainerResponse');
    assert.deepStrictEqual(cc.adjust.env, [{ key: 'K', value: 'v' }]);
    await assert.rejects(rt.call('StopContainer', { pod: { id: 'p' } }, 'StopContainerRequest', 'StopContainerResponse'),
      (err) => err instanceof RpcError && err.code === Code.UNIMPLEMENTED);
    await rt.call('Shutdown', {}, 'Empty', 'Empty');
    assert.strictEqual(await exited, 0);
  } finally {
    child.kill();
    rt.mux.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// register drives a connected plugin through the handshake of the fake
// runtime: Configure, the answer to RegisterPlugin, one Synchronize.
async function register(rt) {
  await rt.call('Configure', { runtime_name: 'fake', NRI_version: 'v0.12.5', registration_timeout: 5000, request_timeout: 2000, supported_events: 0x3fff },
    'ConfigureRequest', 'ConfigureResponse');
  rt.answerRegister();
  await rt.call('Synchronize', {}, 'SynchronizeRequest', 'SynchronizeResponse');
}

const TIMESTAMPED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[42-js-env\] /;

test('started by hand it reconnects when the runtime goes away, and ends at Shutdown; --log-file keeps timestamped lines', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'js-env-'));
  const sock = path.join(dir, 'nri.sock');
  const logFile = path.join(dir, 'plugin.log');
  const first = fakeRuntime(sock);
  await first.listening;
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'plugin.js'), '--socket', sock, '--idx', '42', '--log-file', logFile],
    { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  let second = null;
  try {
    const rt1 = await first.connected;
    await register(rt1);
    // The runtime restarts: the connection drops without Shutdown, and a
    // new runtime listens on the same path.
    rt1.mux.destroy();
    await rt1.closed;
    fs.rmSync(sock, { force: true });
    second = fakeRuntime(sock);
    await second.listening;
    const rt2 = await second.connected;
    await register(rt2);
    const cc = await rt2.call('CreateContainer', { pod: { id: 'p' }, container: { id: 'c', pod_sandbox_id: 'p' } }, 'CreateContainerRequest', 'CreateContainerResponse');
    assert.deepStrictEqual(cc.adjust.env, [{ key: 'JS_PLUGIN', value: 'hello' }]);
    await rt2.call('Shutdown', {}, 'Empty', 'Empty');
    assert.strictEqual(await exited, 0);
    const lines = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n');
    for (const line of lines) {
      assert.match(line, TIMESTAMPED);
    }
    assert.ok(lines.some((l) => l.includes('reconnecting in 1000 ms')), lines.join('\n'));
    assert.strictEqual(lines.filter((l) => l.endsWith('] registered')).length, 2, lines.join('\n'));
    assert.strictEqual(fs.statSync(logFile).mode & 0o777 & ~0o640, 0);
  } finally {
    child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('with --no-reconnect it exits when the runtime goes away', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'js-env-'));
  const sock = path.join(dir, 'nri.sock');
  const { listening, connected } = fakeRuntime(sock);
  await listening;
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'plugin.js'), '--socket', sock, '--idx', '42', '--quiet', '--no-reconnect'],
    { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  try {
    const rt = await connected;
    await register(rt);
    rt.mux.destroy();
    assert.strictEqual(await exited, 0);
  } finally {
    child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('options: --log-file and --no-reconnect', () => {
  const o = parseOptions(['--log-file', '/tmp/x.log', '--no-reconnect'], {});
  assert.strictEqual(o.logFile, '/tmp/x.log');
  assert.strictEqual(o.reconnect, false);
  const d = parseOptions([], {});
  assert.strictEqual(d.logFile, null);
  assert.strictEqual(d.reconnect, true);
});
