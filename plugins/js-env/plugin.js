#!/usr/bin/env node
'use strict';

// js-env: an NRI plugin in JavaScript, written from docs/protocol.md. It
// registers with the runtime, subscribes to CreateContainer and adds
// environment variables (default JS_PLUGIN=hello) to every container.

const fs = require('fs');
const net = require('net');
const { Mux, PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN } = require('./lib/mux');
const { Endpoint, RpcError, Code } = require('./lib/ttrpc');
const { loadSchema, PLUGIN_SERVICE, RUNTIME_SERVICE } = require('./lib/schema');
const { bit, maskNames, subscribe } = require('./lib/events');
const { parseOptions, parseEnvLines, USAGE } = require('./lib/config');

// The NRI version whose protocol this plugin speaks.
const NRI_VERSION = 'v0.12.5';
const DEFAULT_REGISTRATION_TIMEOUT_MS = 5000;
// Extra time granted beyond the runtime's registration timeout before the
// plugin gives up waiting for the answer to RegisterPlugin.
const REGISTRATION_GRACE_MS = 1000;
const SHUTDOWN_EXIT_DELAY_MS = 2000;

const IMPLEMENTED = bit('CreateContainer');
const REQUIRED = bit('CreateContainer');

// EnvPlugin holds the plugin's state and its Plugin-service handlers.
class EnvPlugin {
  constructor(opts, log) {
    this.opts = opts;
    this.log = log;
    this.env = opts.env;
    this.events = 0;
    this.onShutdown = () => {};
    this.onConfigure = () => {};
  }

  configure(req) {
    if (req.config && req.config.trim() !== '') {
      try {
        this.env = parseEnvLines(req.config, 'configuration');
      } catch (err) {
        throw new RpcError(Code.INVALID_ARGUMENT, err.message);
      }
      if (this.env.length === 0) {
        throw new RpcError(Code.INVALID_ARGUMENT, 'configuration: no KEY=VALUE line');
      }
    }
    let sub;
    try {
      sub = subscribe(IMPLEMENTED, REQUIRED, req);
    } catch (err) {
      throw new RpcError(Code.FAILED_PRECONDITION, err.message);
    }
    if (sub.dropped !== 0) {
      this.log(`not subscribing to ${maskNames(sub.dropped)}: runtime does not deliver them (${sub.source})`);
    }
    this.events = sub.events;
    this.log(`configured by ${req.runtime_name || '?'} ${req.runtime_version || '?'} (NRI ${req.NRI_version || '?'}): ` +
      `events ${maskNames(sub.events)}, injecting ${this.env.map(({ key }) => key).join(',')}`);
    this.onConfigure(req);
    return { events: sub.events };
  }

  synchronize(req) {
    const pods = (req.pods || []).length;
    const containers = (req.containers || []).length;
    this.log(`synchronize: ${pods} pods, ${containers} containers${req.more ? ', more follow' : ''}`);
    if (req.more) {
      return { more: true };
    }
    return { more: false, update: [] };
  }

  createContainer(req) {
    const c = req.container || {};
    const pod = req.pod || {};
    this.log(`CreateContainer ${pod.namespace || ''}/${pod.name || ''}/${c.name || ''} (${c.id || '?'}): ` +
      `adding ${this.env.map(({ key }) => key).join(',')}`);
    return { adjust: { env: this.env.map(({ key, value }) => ({ key, value })) } };
  }

  shutdown() {
    this.log('shutdown requested by the runtime');
    this.onShutdown();
    return {};
  }

  // services returns the Plugin service's handlers for an Endpoint. Every
  // other method is answered with UNIMPLEMENTED by the Endpoint.
  services(schema) {
    const m = (req, resp, fn) => ({ requestType: schema.nri(req), responseType: schema.nri(resp), handler: fn });
    return {
      [PLUGIN_SERVICE]: {
        Configure: m('ConfigureRequest', 'ConfigureResponse', (r) => this.configure(r)),
        Synchronize: m('SynchronizeRequest', 'SynchronizeResponse', (r) => this.synchronize(r)),
        Shutdown: m('Empty', 'Empty', () => this.shutdown()),
        CreateContainer: m('CreateContainerRequest', 'CreateContainerResponse', (r) => this.createContainer(r)),
      },
    };
  }
}

// openSocket returns a connected socket: the inherited descriptor of a
// launched plugin, or a connection to the runtime's socket.
function openSocket(opts) {
  if (opts.fd !== null) {
    return Promise.resolve(new net.Socket({ fd: opts.fd, readable: true, writable: true }));
  }
  return new Promise((resolve, reject) => {
    const s = net.createConnection(opts.socketPath);
    const onError = (err) => reject(new Error(`cannot connect to ${opts.socketPath}: ${err.message}`));
    s.once('error', onError);
    s.once('connect', () => {
      s.removeListener('error', onError);
      resolve(s);
    });
  });
}

// Reconnection backoff of a plugin started by hand (--no-reconnect turns
// it off): the first attempt after RECONNECT_INITIAL_MS, doubling up to
// RECONNECT_MAX_MS between attempts.
const RECONNECT_INITIAL_MS = 1000;
const RECONNECT_MAX_MS = 30000;
const LOG_FILE_MODE = 0o640;

// openLog returns the plugin's log functions: every line starts with its
// time (runtimes such as containerd do not stamp, or even keep, a
// plugin's output) and goes to standard error or, with --log-file, is
// appended to that file. It throws if the file cannot be opened.
function openLog(opts, full) {
  let write = (line) => process.stderr.write(line);
  if (opts.logFile) {
    const fd = fs.openSync(opts.logFile, 'a', LOG_FILE_MODE);
    write = (line) => fs.writeSync(fd, line);
  }
  const logError = (msg) => write(`${new Date().toISOString()} [${full}] ${msg}\n`);
  return { logError, log: opts.quiet ? () => {} : logError };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(argv, env) {
  let opts;
  try {
    opts = parseOptions(argv, env);
  } catch (err) {
    process.stderr.write(`js-env: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const full = `${opts.idx}-${opts.name}`;
  let log;
  let logError;
  try {
    ({ log, logError } = openLog(opts, full));
  } catch (err) {
    process.stderr.write(`js-env: cannot open the log file: ${err.message}\n`);
    return 1;
  }

  const schema = loadSchema(opts.proto || undefined);
  const plugin = new EnvPlugin(opts, log);
  // A launched plugin (inherited fd) cannot reconnect: the runtime starts
  // it again. One started by hand reconnects after losing a registered
  // connection, but not after Shutdown (a runtime sends it to dismiss the
  // plugin) and not if its first registration fails.
  const reconnect = opts.reconnect && opts.fd === null;
  let delay = RECONNECT_INITIAL_MS;
  for (let attempt = 0; ; attempt++) {
    let socket;
    try {
      socket = await openSocket(opts);
    } catch (err) {
      if (attempt === 0 || !reconnect) {
        logError(err.message);
        return 1;
      }
      logError(`reconnecting failed: ${err.message}; next attempt in ${delay} ms`);
      await sleep(delay);
      delay = Math.min(2 * delay, RECONNECT_MAX_MS);
      continue;
    }
    const outcome = await session(socket, opts, full, schema, plugin, log, logError);
    if (!reconnect || outcome.shutdown || (attempt === 0 && !outcome.registered)) {
      return outcome.code;
    }
    if (outcome.registered) {
      delay = RECONNECT_INITIAL_MS;
    }
    log(`connection to the runtime lost: reconnecting in ${delay} ms`);
    await sleep(delay);
    delay = Math.min(2 * delay, RECONNECT_MAX_MS);
  }
}

// session registers the plugin on a connected socket and serves it until
// the connection ends. It resolves {code, registered, shutdown}: the exit
// status for a plugin that does not reconnect, whether the registration
// completed, and whether the runtime sent Shutdown.
function session(socket, opts, full, schema, plugin, log, logError) {
  return new Promise((resolve) => {
    let registered = false;
    let shuttingDown = false;
    let exitCode = null;
    let regTimer = null;
    const finish = (code) => {
      if (exitCode === null) {
        exitCode = code;
        clearTimeout(regTimer);
        resolve({ code, registered, shutdown: shuttingDown });
      }
    };

    const mux = new Mux(socket, {
      log,
      onError: (err) => {
        logError(`connection error: ${err.message}`);
      },
      onClose: () => {
        if (shuttingDown) {
          finish(0);
        } else if (registered) {
          log('connection closed by the runtime');
          finish(0);
        } else {
          logError('connection closed before registration completed');
          finish(1);
        }
      },
    });
    const pluginSide = new Endpoint({
      types: schema.ttrpc,
      services: plugin.services(schema),
      log,
      send: (b) => mux.write(PLUGIN_SERVICE_CONN, b),
    });
    mux.attach(PLUGIN_SERVICE_CONN, pluginSide);
    const runtimeSide = new Endpoint({ types: schema.ttrpc, log, send: (b) => mux.write(RUNTIME_SERVICE_CONN, b) });
    mux.attach(RUNTIME_SERVICE_CONN, runtimeSide);

    plugin.onShutdown = () => {
      shuttingDown = true;
      // Close after the answer to Shutdown is queued (handlers' answers are
      // written once their result is settled, before setImmediate fires).
      setImmediate(() => mux.end());
      setTimeout(() => finish(0), SHUTDOWN_EXIT_DELAY_MS).unref();
    };

    const armRegistrationTimer = (ms) => {
      clearTimeout(regTimer);
      regTimer = setTimeout(() => {
        if (!registered) {
          logError(`no answer to RegisterPlugin within ${ms} ms`);
          mux.destroy();
          finish(1);
        }
      }, ms);
    };
    armRegistrationTimer(DEFAULT_REGISTRATION_TIMEOUT_MS + REGISTRATION_GRACE_MS);
    plugin.onConfigure = (req) => {
      if (!registered && req.registration_timeout > 0) {
        armRegistrationTimer(req.registration_timeout + REGISTRATION_GRACE_MS);
      }
    };

    const request = { plugin_name: opts.name, plugin_idx: opts.idx, NRI_version: NRI_VERSION };
    log(`registering as ${full} (${opts.fd !== null ? `inherited fd ${opts.fd}` : opts.socketPath})`);
    runtimeSide.call(RUNTIME_SERVICE, 'RegisterPlugin', schema.nri('RegisterPluginRequest'), schema.nri('Empty'),
      request, DEFAULT_REGISTRATION_TIMEOUT_MS, { enforce: false })
      .then(() => {
        registered = true;
        clearTimeout(regTimer);
        log('registered');
      })
      .catch((err) => {
        if (exitCode === null) {
          logError(`registration failed: ${err.message}`);
          mux.destroy();
          finish(1);
        }
      });
  });
}

if (require.main === module) {
  main(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`js-env: ${err && err.stack ? err.stack : err}\n`);
      process.exit(1);
    },
  );
}

module.exports = { main, EnvPlugin };
