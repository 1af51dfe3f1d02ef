'use strict';

// NRI events and subscription masks (docs/protocol.md section 6).

// EVENTS[v - 1] is the name of the event with enum value v.
const EVENTS = Object.freeze([
  'RunPodSandbox',
  'StopPodSandbox',
  'RemovePodSandbox',
  'CreateContainer',
  'PostCreateContainer',
  'StartContainer',
  'PostStartContainer',
  'UpdateContainer',
  'PostUpdateContainer',
  'StopContainer',
  'RemoveContainer',
  'UpdatePodSandbox',
  'PostUpdatePodSandbox',
  'ValidateContainerAdjustment',
]);

// Event sets of NRI releases (docs/protocol.md 6.2).
const PRE_0_10_EVENTS = 0x07ff; // v0.2.0 - v0.9.x
const POD_UPDATE_EVENTS = 0x1fff; // the pre-release CRI-O 1.33 uses
const ALL_EVENTS = 0x3fff; // v0.10.0 and later
// Versions whose event set differs from the release before them.
const EXACT_VERSION_EVENTS = Object.freeze({ 'v0.9.1-0.20250219030224-e597e7849f24': POD_UPDATE_EVENTS });
// Placeholders runtimes report when they do not know their NRI version.
const UNKNOWN_VERSIONS = new Set(['', 'unknown', '(devel)', '0.0.0-unknown', 'v0.0.0-unknown']);
// The NRI version runtime releases were built with: each entry holds from
// its runtime version up to the next entry's.
const RUNTIME_NRI_VERSIONS = Object.freeze({
  'containerd': [['v1.7.0', 'v0.3.0'], ['v1.7.7', 'v0.4.0'], ['v1.7.14', 'v0.6.0'], ['v1.7.16', 'v0.6.1'],
    ['v1.7.26', 'v0.8.0'], ['v2.2.0', 'v0.10.0'], ['v2.2.1', 'v0.11.0']],
  'cri-o': [['v1.26.0', 'v0.2.0'], ['v1.26.2', 'v0.3.0'], ['v1.26.4', 'v0.3.1-0.20230504231226-94185418e253'],
    ['v1.27.0', 'v0.3.0'], ['v1.27.1', 'v0.3.1-0.20230504231226-94185418e253'], ['v1.29.0', 'v0.5.0'],
    ['v1.29.2', 'v0.6.0'], ['v1.31.0', 'v0.6.1'], ['v1.32.0', 'v0.9.0'],
    ['v1.33.0', 'v0.9.1-0.20250219030224-e597e7849f24'], ['v1.34.0', 'v0.10.0'], ['v1.35.0', 'v0.11.0']],
});

// bit returns the mask bit of the named event.
function bit(name) {
  const i = EVENTS.indexOf(name);
  if (i < 0) {
    throw new Error(`unknown event ${name}`);
  }
  return 1 << i;
}

// maskNames lists the events of a mask, e.g. "CreateContainer,StopContainer".
function maskNames(mask) {
  const names = EVENTS.filter((_, i) => (mask & (1 << i)) !== 0);
  return names.length ? names.join(',') : 'none';
}

// parseVersion parses "[v]MAJOR[.MINOR[.PATCH]][suffix]" into
// {num: [major, minor, patch], pre}, or null. A "-" suffix makes a
// pre-release (sorting before the release) unless it is a git-describe
// suffix "-N-gHEX[...]" (commits after the release); other suffixes
// ("+build", "~ds1") are ignored.
function parseVersion(text) {
  const m = /^v?(\d+)(?:\.(\d+)(?:\.(\d+))?)?(.*)$/.exec(String(text).trim());
  if (!m) {
    return null;
  }
  const rest = m[4];
  const pre = rest.startsWith('-') && !/^-\d+-g[0-9a-fA-F]+(\..*)?$/.test(rest);
  return { num: [Number(m[1]), Number(m[2] || 0), Number(m[3] || 0)], pre };
}

// compareVersions returns -1, 0 or 1 as parsed version a is before, equal
// to or after b.
function compareVersions(a, b) {
  for (let i = 0; i < 3; i++) {
    if (a.num[i] !== b.num[i]) {
      return a.num[i] < b.num[i] ? -1 : 1;
    }
  }
  if (a.pre === b.pre) {
    return 0;
  }
  return a.pre ? -1 : 1;
}

// versionEvents returns the events an NRI version knows, or null if the
// version cannot be parsed or predates the ttrpc protocol (v0.2.0).
function versionEvents(version) {
  const trimmed = String(version || '').trim();
  if (Object.prototype.hasOwnProperty.call(EXACT_VERSION_EVENTS, trimmed)) {
    return EXACT_VERSION_EVENTS[trimmed];
  }
  const v = parseVersion(trimmed);
  if (v === null || compareVersions(v, parseVersion('v0.2.0')) < 0) {
    return null;
  }
  return compareVersions(v, parseVersion('v0.10.0')) < 0 ? PRE_0_10_EVENTS : ALL_EVENTS;
}

// inferNRIVersion returns the NRI version a runtime release was built
// with, or null if the runtime or its release is not known.
function inferNRIVersion(runtimeName, runtimeVersion) {
  const table = RUNTIME_NRI_VERSIONS[String(runtimeName || '').trim().toLowerCase()];
  const rv = parseVersion(runtimeVersion || '');
  if (!table || rv === null) {
    return null;
  }
  let nri = null;
  for (const [runtime, version] of table) {
    if (compareVersions(rv, parseVersion(runtime)) < 0) {
      break;
    }
    nri = version;
  }
  return nri;
}

// runtimeEvents returns {mask, known, source}: the events the runtime that
// sent ConfigureRequest req delivers, from its supported_events, its
// NRI_version, the NRI version inferred from its name and version, or,
// failing all, the oldest event set (known=false: an assumption).
function runtimeEvents(req) {
  const advertised = (req.supported_events || 0) & ALL_EVENTS;
  if (advertised !== 0) {
    return { mask: advertised, known: true, source: 'advertised by the runtime' };
  }
  const reported = UNKNOWN_VERSIONS.has(String(req.NRI_version || '').trim()) ? '' : String(req.NRI_version).trim();
  if (reported !== '') {
    const m = versionEvents(reported);
    if (m !== null) {
      return { mask: m, known: true, source: `NRI ${reported} reported by the runtime` };
    }
  }
  const rt = `${req.runtime_name || ''} ${req.runtime_version || ''}`.trim() || 'the runtime';
  const inferred = inferNRIVersion(req.runtime_name, req.runtime_version);
  if (inferred !== null && versionEvents(inferred) !== null) {
    return { mask: versionEvents(inferred), known: true, source: `NRI ${inferred} inferred from ${rt}` };
  }
  return { mask: PRE_0_10_EVENTS, known: false, source: `NRI version of ${rt} unknown, assuming the oldest event set` };
}

// subscribe computes the subscription for a plugin that implements the
// events of mask `implemented` and needs those of mask `required`. It
// returns {events, dropped, source}; it throws if a required event is
// missing, so that the result is never 0 ("all events") by accident.
//
// When the runtime's events are only assumed (known=false), required
// events are kept and the runtime decides.
function subscribe(implemented, required, req) {
  const rt = runtimeEvents(req);
  const source = rt.source;
  const mask = rt.known ? rt.mask : rt.mask | required;
  const events = implemented & mask;
  const dropped = implemented & ~mask;
  const missing = required & ~events;
  if (missing !== 0) {
    throw new Error(`runtime does not deliver required events ${maskNames(missing)} (runtime events from ${source}: ${maskNames(mask)})`);
  }
  if (events === 0) {
    throw new Error(`runtime delivers none of the implemented events ${maskNames(implemented)}`);
  }
  return { events, dropped, source };
}

module.exports = {
  EVENTS, ALL_EVENTS, PRE_0_10_EVENTS, POD_UPDATE_EVENTS,
  bit, maskNames, parseVersion, compareVersions, versionEvents, inferNRIVersion, runtimeEvents, subscribe,
};
