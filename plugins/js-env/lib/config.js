'use strict';

// Command line, environment and configuration-string parsing for the
// js-env plugin.

const DEFAULT_NAME = 'js-env';
const DEFAULT_IDX = '50';
const DEFAULT_SOCKET = '/var/run/nri/nri.sock';
const DEFAULT_ENV = 'JS_PLUGIN=hello';

const USAGE = `usage: node plugin.js [options]

Registers with an NRI runtime and adds environment variables to every
container created.

  --socket PATH        connect to the runtime's socket (default: $NRI_SOCKET_PATH,
                       else ${DEFAULT_SOCKET}); ignored when the runtime launched
                       the plugin (NRI_PLUGIN_SOCKET is set)
  --name NAME          plugin name (default: $NRI_PLUGIN_NAME, else ${DEFAULT_NAME})
  --idx IDX            two-digit plugin index (default: $NRI_PLUGIN_IDX, else ${DEFAULT_IDX})
  --env KEY=VALUE      variable to inject; repeatable (default: $NRI_JS_ENV, one
                       KEY=VALUE per line, else ${DEFAULT_ENV})
  --proto PATH         nri.proto to load (default: the repository's proto/nrikit/nri.proto)
  --log-file PATH      append log lines to PATH (created with mode 0640) instead of
                       standard error, which runtimes may discard
  --no-reconnect       exit when the connection to the runtime is lost; by default a
                       plugin started by hand reconnects (a runtime restart)
  --quiet              log errors only
  -h, --help           print this help

The runtime's configuration string (ConfigureRequest.config), if not empty,
replaces the variables: one KEY=VALUE per line; empty lines and lines
starting with # are ignored.
`;

const NAME_RE = /^[a-zA-Z0-9_.+-]+$/;
const IDX_RE = /^[0-9]{2}$/;

// parseEnvLines parses "KEY=VALUE" lines into [{key, value}]. Keys must be
// non-empty, must not contain "=" and must not start with "-" (which NRI
// reads as a removal marker).
function parseEnvLines(text, what) {
  const out = [];
  const seen = new Map();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) {
      return;
    }
    out.push(parseEnvAssignment(line, `${what}, line ${i + 1}`));
  });
  for (const { key, value } of out) {
    if (seen.has(key) && seen.get(key) !== value) {
      throw new Error(`${what}: variable ${key} given twice with different values`);
    }
    seen.set(key, value);
  }
  return out.filter(({ key }, i) => out.findIndex((kv) => kv.key === key) === i);
}

// parseEnvAssignment parses one "KEY=VALUE".
function parseEnvAssignment(text, what) {
  const eq = text.indexOf('=');
  if (eq <= 0) {
    throw new Error(`${what}: ${JSON.stringify(text)} is not KEY=VALUE`);
  }
  const key = text.slice(0, eq);
  if (key.startsWith('-')) {
    throw new Error(`${what}: variable name ${JSON.stringify(key)} must not start with "-"`);
  }
  return { key, value: text.slice(eq + 1) };
}

// parseOptions builds the plugin's options from argv (without "node
// plugin.js") and the environment. It throws on invalid input; a result
// with help=true asks for the usage text.
function parseOptions(argv, env) {
  const flags = { env: [] };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value = null;
    if (arg === '-h' || arg === '--help') {
      return { help: true };
    }
    if (arg === '--quiet') {
      flags.quiet = true;
      continue;
    }
    if (arg === '--no-reconnect') {
      flags.noReconnect = true;
      continue;
    }
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (!['--socket', '--name', '--idx', '--env', '--proto', '--log-file'].includes(arg)) {
      throw new Error(`unknown argument ${JSON.stringify(argv[i])}`);
    }
    if (value === null) {
      if (i + 1 >= argv.length) {
        throw new Error(`${arg} needs a value`);
      }
      value = argv[++i];
    }
    if (arg === '--env') {
      flags.env.push(parseEnvAssignment(value, '--env'));
    } else if (arg === '--log-file') {
      flags.logFile = value;
    } else {
      flags[arg.slice(2)] = value;
    }
  }

  const opts = {
    help: false,
    quiet: Boolean(flags.quiet),
    // Reconnecting applies to a plugin that dials the runtime's socket; a
    // launched one (inherited fd) is started again by the runtime.
    reconnect: !flags.noReconnect,
    logFile: flags.logFile || null,
    name: flags.name || env.NRI_PLUGIN_NAME || DEFAULT_NAME,
    idx: flags.idx || env.NRI_PLUGIN_IDX || DEFAULT_IDX,
    proto: flags.proto || null,
    fd: null,
    socketPath: null,
    env: null,
  };
  if (!NAME_RE.test(opts.name)) {
    throw new Error(`invalid plugin name ${JSON.stringify(opts.name)}: must match ${NAME_RE}`);
  }
  if (!IDX_RE.test(opts.idx)) {
    throw new Error(`invalid plugin index ${JSON.stringify(opts.idx)}: must be two digits`);
  }
  if (env.NRI_PLUGIN_SOCKET) {
    const fd = Number(env.NRI_PLUGIN_SOCKET);
    if (!Number.isInteger(fd) || fd < 0 || String(fd) !== env.NRI_PLUGIN_SOCKET.trim()) {
      throw new Error(`invalid NRI_PLUGIN_SOCKET ${JSON.stringify(env.NRI_PLUGIN_SOCKET)}: not a file descriptor number`);
    }
    opts.fd = fd;
  } else {
    opts.socketPath = flags.socket || env.NRI_SOCKET_PATH || DEFAULT_SOCKET;
  }
  if (flags.env.length > 0) {
    opts.env = parseEnvLines(flags.env.map(({ key, value }) => `${key}=${value}`).join('\n'), '--env');
  } else if (env.NRI_JS_ENV) {
    opts.env = parseEnvLines(env.NRI_JS_ENV, 'NRI_JS_ENV');
  } else {
    opts.env = parseEnvLines(DEFAULT_ENV, 'default');
  }
  return opts;
}

module.exports = { parseOptions, parseEnvLines, USAGE, DEFAULT_ENV, DEFAULT_IDX, DEFAULT_NAME, DEFAULT_SOCKET };
