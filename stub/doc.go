// Package stub is the library a Node Resource Interface (NRI) plugin is
// built with. A plugin is any Go value implementing one or more of the
// handler interfaces of package stub/handler
// ([handler.CreateContainerInterface], [handler.RunPodInterface], ...);
// [New] wraps it in a [Stub], which connects to the runtime, registers,
// subscribes the plugin to the events it handles and dispatches the
// runtime's requests to the handlers.
//
// The handler interfaces have exactly the method signatures of
// containerd/nri's stub package, so a plugin written for upstream is ported
// by changing its imports (stub.CreateContainerInterface is
// handler.CreateContainerInterface here; compat/nri keeps upstream's
// names). The same plugin builds into a WebAssembly module
// with package stub/wasmguest, which serves the runtime's requests with the
// stub's own core (stub/internal/core): configuration, subscription,
// scopes and opt-outs behave alike in both.
//
//	type plugin struct{}
//
//	func (plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
//		adjust := &api.ContainerAdjustment{
//			Env: []*api.KeyValue{{Key: "HELLO", Value: "world"}},
//		}
//		return adjust, nil, nil
//	}
//
//	func main() {
//		s, err := stub.New(plugin{}, stub.WithPluginIdx("10"), stub.WithPluginName("hello"))
//		if err != nil { ... }
//		if err := s.Run(ctx); err != nil { ... }
//	}
//
// # Identity and connection
//
// A plugin launched by the runtime finds the inherited socket in the
// environment (NRI_PLUGIN_SOCKET, with NRI_PLUGIN_NAME and NRI_PLUGIN_IDX);
// these take precedence over options. Otherwise the name and index come from
// [WithPluginName] and [WithPluginIdx], or from the executable's base name
// when it has the form IDX-NAME (such as "10-hello"); a name alone is not
// enough, the index is required. An external plugin then dials the runtime's
// socket ([api.DefaultSocketPath] unless [WithSocketPath] or [WithDialer]).
// [WithConnection] supplies a ready connection and overrides all of this for
// the connection (not the identity).
//
// # Registration
//
// [Stub.Start] calls the runtime's RegisterPlugin and waits until the
// runtime has configured the plugin (Plugin.Configure) and accepted the
// registration. A nrikit runtime calls Configure before it answers
// RegisterPlugin, and answers with an error status carrying the full reason
// when it rejects the plugin; an upstream runtime answers RegisterPlugin
// first and then calls Configure. Start accepts both orders and returns nil
// only when both steps succeeded (or when the runtime has begun to
// synchronize the plugin, which it does only after accepting it). A rejection by the runtime is returned as
// a *[RegistrationError]; a lost connection, an expired registration timeout
// or a failed local configuration are returned as errors wrapping
// [ErrConnectionLost], [ErrRegistrationTimeout] or the configuration error.
// Start waits at most the registration timeout: [api.DefaultRegistrationTimeout]
// or [WithRegistrationTimeout] at first, and the runtime's registration
// timeout, counted from the moment Configure arrives, once Configure has told
// the stub what it is. The stub also adopts the runtime's request timeout.
//
// # Subscription
//
// A plugin is subscribed to the events it implements handlers for, or to
// the events given with [WithSubscription], or to what its Configure handler
// returns (which must be a subset of the implemented events). The stub then
// intersects this set with what the runtime can deliver, so that an
// otherwise working plugin never fails to register because it handles an
// event that an older runtime does not know:
//
//   - a nrikit runtime advertises its events (ConfigureRequest.supported_events);
//   - otherwise the runtime's NRI version decides (ConfigureRequest.NRI_version,
//     sent by containerd/nri v0.12 and later), using the table below;
//   - a runtime that reports no version (containerd/nri v0.11 and older)
//     is identified by its name and version (containerd, cri-o), as
//     upstream's InferVersionFromRuntime does;
//   - if the version still cannot be determined, the stub assumes the
//     oldest event set (that of NRI v0.2.0): every runtime ever released
//     delivers these, and a runtime of NRI v0.9 or older rejects a plugin
//     that subscribes to anything else. Events given with
//     [WithRequiredEvents] are kept in this case: the plugin cannot work
//     without them, so it is better to let the runtime decide.
//
// Which NRI release introduced which event, established from each
// release's pkg/api/api.proto Event enum and the events its adaptation
// accepts (ValidEvents, all events of the enum):
//
//	v0.2.0 - v0.9.0   RunPodSandbox, StopPodSandbox, RemovePodSandbox,
//	                  CreateContainer, PostCreateContainer, StartContainer,
//	                  PostStartContainer, UpdateContainer,
//	                  PostUpdateContainer, StopContainer, RemoveContainer
//	v0.9.1-0.20250219030224-e597e7849f24 (pre-release used by CRI-O 1.33)
//	                  + UpdatePodSandbox, PostUpdatePodSandbox
//	v0.10.0 and later + UpdatePodSandbox, PostUpdatePodSandbox,
//	                    ValidateContainerAdjustment
//
// Other pre-releases count as the release before them, which is the safe
// direction. Events that are dropped are logged once, by name. Registration
// fails only if an event given with [WithRequiredEvents] cannot be
// delivered (the error, an *[UnsupportedEventsError], names it; the stub
// returns it from the Configure request, so a nrikit runtime reports it,
// and from Start), or if no event at all is left, because an empty
// subscription means "all events" on the wire. [Stub.Subscription] reports
// the effective subscription.
//
// # Handlers
//
// Handlers are called concurrently: the runtime may have several requests
// in flight (for different pods and containers), and each is handled in its
// own goroutine. A plugin with shared state must protect it. A handler that
// panics is recovered: the request is answered with an error whose message
// includes the panic value, the stack is logged, and the plugin keeps
// running. A handler that takes longer than the runtime's request timeout
// is logged with its duration; the runtime has given up on it by then.
//
// Synchronize requests that the runtime splits into several parts are
// collected: intermediate parts are answered at once, before they are
// decoded (the stub decodes them while the runtime sends the next), and
// the handler is called once, with all pods and containers in the order
// the runtime sent them, on the last part, when every part is decoded. A
// part that cannot be decoded fails the answer to the last part.
//
// # Extensions
//
// nrikit runtimes understand a few additions that upstream runtimes ignore:
//
//   - opt-out: a RunPodSandbox or CreateContainer handler may return
//     [ErrNotInterestedInPod] or [ErrNotInterestedInContainer] (wrapped is
//     fine). The stub answers successfully, with the pod or container ID in
//     the response's OptOut field, and the runtime sends no further events
//     about it. Whatever adjustment or updates the handler returned with
//     the sentinel are sent too, but nrikit's runtime ignores them (an
//     opt-out answer carries no changes; see docs/scope.md), while
//     upstream runtimes, which ignore the opt-out, apply them. Other handlers may return the sentinels as
//     well; they are answered successfully, without an opt-out, since their
//     responses have no field for it. A plugin can opt out during
//     Synchronize by implementing [handler.SynchronizeOptOutInterface].
//   - evictions: [handler.CreateContainerEvicter] and
//     [handler.UpdateContainerEvicter] are
//     variants of the CreateContainer and UpdateContainer handlers that can
//     also ask the runtime to evict containers; a plugin implements one or
//     the other. [Stub.UpdateContainers] takes evictions too.
//   - [WithRequestTimeout] asks the runtime for a longer request timeout.
//   - [WithScope] limits the pods and containers the plugin's handlers are
//     called about, on every runtime: nrikit's runtime evaluates the scope
//     and sends nothing else; on a runtime that does not say it evaluates
//     scopes (ConfigureRequest.supported_events unset: containerd, CRI-O)
//     the stub enforces the scope itself, with the same semantics
//     (docs/scope.md), before any handler is called. A CEL expression in
//     the scope needs [WithCEL] there, so that plugins without one do not
//     link a CEL implementation.
//
// # Lifetime
//
// [Stub.Run] starts the stub and serves until the connection is lost, the
// runtime shuts the plugin down, the context is done or [Stub.Stop] is
// called, and returns why. With [WithReconnect], an external plugin whose
// runtime goes away dials again with exponential backoff and registers
// again; the new runtime then synchronizes it with its current state.
// [WithOnClose] is called each time a registered connection ends.
//
// A stub changes no process-wide setting by itself. A plugin's own binary
// opts in with one line at the start of main, [TuneProcess], which sets
// GOMAXPROCS to one (its documentation gives the trade-off, with
// figures); [WithSyncGCPercent] relaxes the garbage collector while a
// large Synchronize arrives, and [WithMaxProcs] sets GOMAXPROCS when the
// stub starts.
//
// # Limits
//
// Every write to the runtime is bounded, so that a runtime that stops
// reading its socket (a stopped or stuck process) cannot hang the plugin: a
// write the runtime has not taken within the registration timeout (before
// Configure) or the runtime's request timeout ([Stub.RequestTimeout], once
// Configure has told the stub) fails. The connection is then treated as
// lost: [Stub.UpdateContainers] returns an error, the stub closes the
// connection and [Stub.Run] and [Stub.Wait] return an error wrapping
// [ErrConnectionLost] (or, with [WithReconnect], the stub dials again). So
// an UpdateContainers call the runtime has taken returns by its context's
// deadline (the request timeout by default), and one the runtime does not
// take fails after about the write timeout, even if the context allows
// longer; [Stub.Stop] closes the connection without waiting for the
// runtime. Answers that are still being written when the connection ends,
// by Stop, by a Shutdown or by the runtime closing it, are dropped: the
// stub reports why the connection ended itself (Wait, [WithOnClose], its
// logger), and ttrpc logs nothing about a connection that ended normally.
//
// Requests that carry pods and containers (Synchronize and every event)
// are decoded by a hand-written decoder that yields exactly what
// proto.Unmarshal would, about 1.5x faster; it runs as a ttrpc server
// interceptor chained after any the plugin sets with [WithTTRPCOptions].
// The strings of the pods and containers a handler is given are not
// copied out of the request: they share the bytes the request arrived in
// (ttrpc's copy of it, which nothing changes), about 150 allocations fewer
// for a typical CreateContainer. A string a plugin keeps therefore keeps
// that request's bytes in memory: a few kilobytes for an event, up to a
// Synchronize part of a few megabytes (see the runtime's
// MaxSyncMessageSize). A plugin that keeps a few strings of many requests
// for long should keep copies (strings.Clone).
//
// [NewBuiltin] performs the same dispatch in-process, for runtimes that
// host plugins as Go values.
//
// What the stub does with a request once it has it, from Configure's
// subscription to the scope gate and the handlers' opt-outs, is the
// transport-free core in stub/internal/core; the stub adds the connection,
// the registration, metrics and the process settings around it.
package stub
