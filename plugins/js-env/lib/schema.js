'use strict';

// Loading the protobuf schemas: nri.proto (the NRI messages) and
// ttrpc.proto (ttrpc's Request and Response) beside this plugin.

const path = require('path');
const protobuf = require('protobufjs');

const NRI_PACKAGE = 'nri.pkg.api.v1alpha1';
// Service names as they appear in ttrpc requests.
const PLUGIN_SERVICE = `${NRI_PACKAGE}.Plugin`;
const RUNTIME_SERVICE = `${NRI_PACKAGE}.Runtime`;

// defaultNRIProto is the schema of this repository, proto/nrikit/nri.proto.
const defaultNRIProto = path.join(__dirname, '..', '..', '..', 'proto', 'nrikit', 'nri.proto');
const ttrpcProto = path.join(__dirname, '..', 'ttrpc.proto');

// loadSchema parses both schemas and returns {nri(name), ttrpc: {Request,
// Response}}; nri(name) looks up a message of package nri.pkg.api.v1alpha1.
function loadSchema(nriProto = defaultNRIProto) {
  const root = new protobuf.Root();
  // keepCase: field names as in the .proto files (NRI_version, plugin_idx).
  root.loadSync([nriProto, ttrpcProto], { keepCase: true });
  root.resolveAll();
  return {
    nri: (name) => root.lookupType(`${NRI_PACKAGE}.${name}`),
    ttrpc: {
      Request: root.lookupType('ttrpc.Request'),
      Response: root.lookupType('ttrpc.Response'),
    },
  };
}

module.exports = { loadSchema, defaultNRIProto, PLUGIN_SERVICE, RUNTIME_SERVICE, NRI_PACKAGE };
