// Package api holds the Node Resource Interface (NRI) wire protocol: the
// protobuf messages and ttrpc services generated from proto/nrikit/nri.proto,
// and helpers for working with them.
//
// The messages are wire-identical to containerd/nri v0.12.5; nrikit's own
// extensions use field numbers 1000 and up (see [ExtensionFieldMin]) and new
// messages ([PluginScope], [OptOut], [AnnotationMatch]) that peers built
// from upstream's schema never see.
//
// Helpers cover the event mask ([EventMask], [ParseEventMask]), plugin
// identities ([ParsePluginName], [CheckPluginName], [CheckPluginIndex]),
// builders for container adjustments and updates, and the removal-marker
// convention ([MarkForRemoval]).
package api

//go:generate make -C .. generate

import "time"

const (
	// ExtensionFieldMin is the lowest protobuf field number nrikit uses
	// for its extensions of upstream messages. Upstream never uses
	// numbers at or above it.
	ExtensionFieldMin = 1000
	// ExtensionFieldMax is the highest field number reserved for nrikit
	// extensions.
	ExtensionFieldMax = 1999

	// DefaultSocketPath is where a runtime listens for external plugins.
	DefaultSocketPath = "/var/run/nri/nri.sock"

	// DefaultRegistrationTimeout is the default time a plugin has to
	// register and be configured (the same default as upstream).
	DefaultRegistrationTimeout = 5 * time.Second
	// DefaultRequestTimeout is the default time a plugin has to answer
	// one request (the same default as upstream).
	DefaultRequestTimeout = 2 * time.Second

	// PluginServiceName is the ttrpc service name of the Plugin service.
	PluginServiceName = "nri.pkg.api.v1alpha1.Plugin"
	// RuntimeServiceName is the ttrpc service name of the Runtime service.
	RuntimeServiceName = "nri.pkg.api.v1alpha1.Runtime"
)

// Aliases for the request and response types of calls whose argument or
// result is [Empty].
type (
	// ShutdownRequest is the argument of Plugin.Shutdown.
	ShutdownRequest = Empty
	// ShutdownResponse is the result of Plugin.Shutdown.
	ShutdownResponse = Empty
	// StateChangeResponse is the result of Plugin.StateChange.
	StateChangeResponse = Empty
	// RegisterPluginResponse is the result of Runtime.RegisterPlugin.
	RegisterPluginResponse = Empty
)
