// Package tracing shows OpenTelemetry tracing through nrikit's runtime
// library and stub as containerd sets it up (otelttrpc's interceptors).
// It is a module of its own so that the OpenTelemetry SDK and otelttrpc,
// which only this test needs, stay out of nrikit's go.mod: a runtime or
// plugin that adopts nrikit (or compat/nri) inherits that go.mod's
// requirements, and a newer OpenTelemetry than its own breaks its
// tracing (issue 39: nri-plugins' topology-aware failed at start with
// "conflicting Schema URL").
package tracing
