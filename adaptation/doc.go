// Package adaptation is the runtime side of the Node Resource Interface
// (NRI): the library a container runtime links to host NRI plugins. It
// discovers and launches pre-installed plugins, accepts external ones on a
// unix socket, runs builtin (in-process) ones, registers and synchronizes
// them, and turns their answers to each lifecycle event into one result.
//
// # Plugins
//
// Every plugin, whatever its kind, is reached through one internal
// interface, its endpoint, which decides how a request travels: a
// connection encodes it (what the requests of one event to several
// plugins share, once), a builtin plugin gets a deep copy. All events take
// the same path (dispatch.go): subscription check, per-plugin request
// timeout, StateChange fallback for old plugins, metrics, failure
// classification and failure policy. docs/internals.md describes the
// plugin lifecycle, the per-plugin queues and the path of one
// CreateContainer for maintainers.
//
//   - Pre-installed plugins are the executables named IDX-NAME (two-digit
//     index) in the plugin directory ([WithPluginDir]), and the
//     WebAssembly modules named so (below); other files are skipped with
//     a log line. Each is started with one end of a socket
//     pair as file descriptor 3 and NRI_PLUGIN_NAME, NRI_PLUGIN_IDX and
//     NRI_PLUGIN_SOCKET=3 added to the runtime's environment. Its
//     configuration is <configdir>/IDX-NAME.conf, else
//     <configdir>/NAME.conf ([WithConfigDir]). Its stdout and stderr are
//     logged line by line with the attribute plugin=IDX-NAME (bounded, see
//     Limits below). When it
//     disconnects it is terminated (SIGTERM, then SIGKILL after
//     [WithTerminationGrace]) and reaped; [WithRestartLaunched] restarts it.
//     The runtime takes code and configuration only from files no other
//     user can have written: the plugin and configuration directories,
//     and every directory above them, must be owned by root or the
//     effective user and not writable by their group or others (else
//     Start fails); each plugin file and configuration file, reached
//     through symbolic links, must be a regular file owned by root or
//     the effective user and not writable by its group or others (else
//     it is skipped, with the reason in the log), and so must the way to
//     an executable. A configuration file is read once, through a size
//     cap ([WithMaxPluginConfigSize], 1 MiB), as is a module
//     ([WithMaxWASMModuleSize], 64 MiB).
//   - External plugins connect to the socket ([WithSocketPath]; directory
//     created with mode 0700, or checked: owned by the runtime's user,
//     not writable by others; stale socket removed; socket mode 0600 from
//     the moment it appears, see [WithSocketPath]), or are handed over
//     with [Adaptation.ServeConn].
//   - Builtin plugins ([WithBuiltinPlugin], [WithDefaultValidator]) are
//     in-process api.PluginService values.
//   - WASM plugins ([KindWASM]) are files of the plugin directory named
//     IDX-NAME that hold a WebAssembly module with the ABI of upstream
//     NRI's WASM plugins (docs/wasm-abi.md); the executable bit is not
//     needed. Each is loaded in-process with wazero, concurrently with
//     the other plugins and outside the registry lock (at most
//     [WithMaxConcurrentWASMLoads] WASM plugins at a time, within
//     [WithWASMLoadTimeout]), compiled once per distinct module and, with
//     [WithWASMCacheDir], once per cache directory across restarts. It does not register: its index and name
//     are its file's, its configuration is found as a pre-installed
//     plugin's, and its subscription is its Configure answer's events
//     (none: all events). Every call is bounded by the request timeout
//     (an endless loop is stopped); each instance's memory by
//     [WithWASMMemoryLimit], and all of them together by
//     [WithWASMMemoryBudget]. A call that traps, exits the guest or breaks
//     the ABI discards the instance ([FailureCrashed]): by its failure
//     policy the plugin is kept, its next call running on a fresh instance
//     that is sent its Configure request again first, or dropped (and
//     loaded again with [WithRestartLaunched]). The guest's stdout,
//     stderr and log messages are logged with plugin=IDX-NAME. Stop sends
//     Shutdown and closes the modules; a dropped plugin's module is
//     closed. Built with the tag nri_no_wasm, the library has no WASM
//     support and refuses such files with that reason.
//
// # Registration
//
// A plugin sends RegisterPlugin. The Adaptation checks its name and index
// (a pre-installed plugin must use the ones it was started with), sends
// Configure (with the events this runtime supports, see
// [WithSupportedEvents], and its timeouts), checks the subscription and
// only then answers RegisterPlugin: with success, or with a status error
// whose message is the reason (see [RegistrationError]), after which the
// connection is closed. Then it sends Synchronize, split into parts of at
// most [MaxSyncMessageSize] bytes (a WASM plugin's only if its module
// declares that it handles parts, docs/wasm-abi.md §6), each under the
// synchronize timeout, and
// applies the updates of the plugin's last answer through the runtime's
// [UpdateFunc]. Only then does the plugin receive events. Each step has
// the registration timeout. A second external connection with the same
// name and index replaces the first if it has the same identity (package
// identity: derived from the connection, the process's executable and
// the container the runtime's list puts it in, once per connection; see
// [PluginInfo].Identity): the new one becomes active, the old one
// finishes the events already queued for it, gets Shutdown and is
// closed. One of another identity is refused with both identities, and so
// is an external plugin whose identity the policy's grants and required
// entries of its name do not take (docs/policy.md, Identity). The names (IDX-NAME) of builtin plugins and of the files of the
// plugin directory are reserved for the Adaptation's lifetime (from New
// and Start on): an external plugin registering under one is refused,
// also while the plugin of that name is down or still loading, so that
// it cannot take that name's configuration, administrator's policy and
// required status. Those are keyed by the full name, so the same name
// under another index is another plugin, not reserved.
//
// # Events and the ListFunc contract
//
// Plugins are called in ascending order of index, then name. Mutating
// events (RunPodSandbox, UpdatePodSandbox, CreateContainer,
// StartContainer, UpdateContainer, StopContainer) go to one plugin after
// the other, each seeing the result of the ones before; notifications
// (StopPodSandbox, RemovePodSandbox and the Post* and Remove* container
// events) go to all subscribed plugins concurrently, and the call returns
// when the active ones have handled it. Every plugin has its own ordered
// queue and worker, so each plugin sees events in the order their calls
// started, and a slow plugin delays only itself. No lock is held while a
// plugin is called; concurrent events of the runtime proceed in parallel.
//
// A plugin that declares it only observes (ConfigureResponse.observe_only,
// a nrikit extension; docs/protocol.md §5.5) is never waited for: it gets
// each event in its order once the event's request is final (after the
// other plugins of a mutating event, with their result), after the
// runtime's call returned, and its answers are not used. Because plugins
// may be sent a request after the call returned (observers, and plugins
// catching up after their Synchronize), the runtime must not change the
// objects of a request once it has passed them to the Adaptation.
//
// A plugin that registers is marked synchronizing and the runtime's
// [ListFunc] is called in one critical section that also orders the start
// of every event call. Events that start later are queued for the plugin
// and delivered after its Synchronize, except RunPodSandbox and
// CreateContainer for objects in its snapshot and RemovePodSandbox and
// RemoveContainer for objects it never saw. Mutating events wait for a
// synchronizing plugin (bounded, see below); notifications do not. For every pod and container
// to be seen exactly once, ListFunc must return exactly the objects whose
// creation event (RunPodSandbox, CreateContainer) the runtime has called,
// even if that call is still in progress, and whose removal event
// (RemovePodSandbox, RemoveContainer) it has not called. A runtime meets
// this by adding an object to what ListFunc returns before it calls the
// creation event, and dropping it before it calls the removal event (and
// calling the removal event for an object whose creation failed). ListFunc
// runs while event calls wait to start: it must not call the Adaptation,
// nor wait for a lock the runtime holds while calling it.
//
// # Runtimes that hold their own lock
//
// A runtime that holds a lock of its own around its event calls, and
// takes it to list its pods and containers (containerd and CRI-O do),
// gives [WithSyncFunc] a [SyncFunc] instead of a ListFunc. The lock
// contract is then:
//
//   - Lock order: the runtime's lock, then the Adaptation's. Event calls
//     may be made with the runtime's lock held; SyncFunc is called with
//     no lock of the Adaptation held, takes the runtime's lock, and
//     calls take with its snapshot while holding it; take takes the
//     Adaptation's lock only for the insertion of the plugin (no call to
//     a plugin, no wait on one), and returns.
//   - Exactly once: an event call made under the runtime's lock is either
//     wholly before the snapshot (its object is in the snapshot, or was
//     removed before it) or wholly after it (queued for the plugin, which
//     receives it after Synchronize). So the ListFunc rule above reduces
//     to: what SyncFunc lists under the lock is what exists for the
//     event calls made under the lock.
//   - The plugin's Synchronize is sent after take returned, outside the
//     runtime's lock; the updates it asks for are applied through the
//     [UpdateFunc] on a goroutine of their own, so an UpdateFunc may take
//     the runtime's lock even while an event call holding it waits for
//     the synchronizing plugin.
//   - [Adaptation.BlockPluginSync] holds snapshots off while the runtime
//     changes its state in several steps around an event call; take the
//     block before the runtime's lock, as containerd's CRI service does.
//   - Every wait is bounded: SyncFunc's context ends at the registration
//     timeout (and when Stop cancels it), UpdateFunc's at the request
//     timeout. A runtime that calls [Adaptation.Stop] while holding its
//     lock must let SyncFunc and UpdateFunc return when their context
//     ends (upstream's compatibility module, compat/nri, does this for
//     runtimes written for upstream's API).
//
// docs/embedding.md shows the pattern, and how containerd's and CRI-O's
// configurations map to options.
//
// A mutating event waits for a synchronizing plugin at most the
// synchronize wait ([WithSynchronizeWait], default the request timeout);
// then it proceeds without the plugin ([FailureSynchronizing], handled by
// the plugin's failure policy like a timeout, except that the plugin
// stays connected), and the plugin still gets the event once
// synchronized, its answer unused.
//
// # Failures
//
// A plugin that answers a mutating event with an error fails the request;
// the error is a [*PluginError] naming the plugin. A plugin that times out
// or loses its connection is logged and counted, and its failure policy
// (ConfigureResponse.failure_policy, or the administrator's
// [WithPluginOverride], which takes precedence) decides: by default the
// plugin is disconnected and the request proceeds without it;
// fail_request fails the request; keep_connected keeps the plugin after a
// timeout. A required plugin (see [PluginPolicy]) that is missing makes
// CreateContainer fail with a [*RequiredPluginError]. Conflicting
// adjustments fail CreateContainer with the merge package's
// *ConflictError; a validator's rejection with a [*ValidationError].
// Notifications never fail. A plugin may ask for its own request timeout
// (ConfigureResponse.request_timeout), up to [WithMaxPluginRequestTimeout].
//
// # Scopes and opt-out
//
// A plugin may declare a scope (ConfigureResponse.scope, a nrikit
// extension), and the administrator may set one for it ([PluginPolicy]
// Scope, for plugins that cannot be changed); the effective scope is both
// (filter.And), compiled at registration (a scope that does not compile
// refuses the registration with codes.InvalidArgument) and logged. A CEL
// expression, in a scope or in the policy file's where, needs [WithCEL]:
// without it the package does not link a CEL implementation, and refuses
// such a scope, naming the option (an embedder upgrading from a version
// that always evaluated CEL passes WithCEL(celscope.Compile) to keep
// doing so). Whether
// a pod or container is in the scope is decided when it is created
// (RunPodSandbox, CreateContainer) or synchronized, and holds until it is
// removed; container events need the container's pod in scope too. A
// plugin is sent no event, not even in Synchronize, about objects outside
// its scope, and no Stop or Remove event about objects it did not see;
// such events cost it one filter evaluation (creations) or map lookup
// (others) when dispatch starts, and nothing else. A plugin may also opt
// out of a pod or container in its answer to RunPodSandbox,
// CreateContainer or Synchronize (OptOut): it gets no further events
// about it until it is removed; an opt-out answer carries no changes
// (those in it are ignored with a warning). What is remembered per plugin
// is released when the object is removed. A plugin may update or evict
// only containers in its scope ([ScopeError]). A plugin's failure never
// affects objects outside its scope, and a required plugin is only
// required for the containers in its scope; validators are told, as
// consulted plugins, about the plugins that the container is outside the
// scope of. [PluginInfo] reports the effective scope and counts of events
// filtered and opted out. docs/scope.md has the full semantics. Plugins
// that declare no scope see everything, as with upstream's runtime.
//
// # Limits and failure handling
//
// The numeric bounds below are the fields of one [Limits] value, each
// documented there with its default and range ([WithLimits],
// [DefaultLimits], [Adaptation.Limits]); the options named here set one
// field each.
//
// Every wait on a plugin is bounded, so that a frozen, slow or hostile
// plugin affects only itself and the requests it takes part in:
//
//   - Writes: every message to a plugin must be taken in by it within its
//     request timeout (the registration timeout until it is configured):
//     the connection's multiplexer has that write timeout
//     (mux.WithWriteTimeout), and a write it cuts short closes the
//     connection, whatever the failure policy, because a partly sent
//     message cannot be withdrawn. All calls pending or queued for the
//     plugin then fail at once. So the request timeout covers sending
//     the request as well as the answer, and Shutdown and [Adaptation.Stop]
//     are bounded by it too.
//   - Synchronize: each part within the synchronize timeout
//     ([WithSynchronizeTimeout]), all parts within the synchronize budget
//     ([WithSynchronizeBudget]); other plugins' events wait for a
//     synchronizing plugin at most the synchronize wait (see above).
//   - Answers: an answer to an event larger than [WithMaxAnswerSize], or
//     holding more than the runtime decodes from one message
//     ([MaxUpdatesPerMessage], [MaxEvictionsPerMessage],
//     [MaxMessageValues], [MaxMessageDepth]), is that plugin's failure
//     ([FailureOversize], policy applies, answer unused), found on its
//     bytes before it is decoded (a WASM plugin's size before it is read
//     from the guest's memory); a CreateContainer whose merged result no
//     longer fits one message ([MaxMessageSize]) fails naming the plugin
//     whose answer made it so, never the next one.
//   - Memory: only connection IDs 1 and 2 are accepted (another closes
//     the connection, on the frame's header); until a plugin is
//     configured its frames and messages are limited to 64 KiB (a larger
//     one closes the connection, logged); unread data is bounded per
//     logical connection
//     (mux.DefaultReadQueueBytes, or one frame); a plugin's unanswered
//     UpdateContainers are bounded in number ([WithMaxInFlightUpdates])
//     and bytes, further ones are not read until one is answered, and
//     they are decoded one at a time, each refused (RESOURCE_EXHAUSTED)
//     if it holds more than the bounds above; ttrpc's envelope of every
//     message is checked as it is read (more than 1,024 values close the
//     connection, logged);
//     connections that have not registered are bounded, in all and per
//     peer process ([WithMaxPendingConnections],
//     [WithMaxPendingConnectionsPerPeer]), further ones are closed at
//     once and logged; plugin names are at most api.MaxPluginNameLength bytes.
//   - Logs: each record's message and strings are cut to 8 KiB; the
//     records a plugin causes (its output lines, its WASM module's
//     messages, the runtime's records about its requests) and those
//     about connections that have not registered are let through at
//     [WithPluginLogLimit]'s rate and burst, the others counted in a
//     summary record; a request or answer naming many objects to refuse
//     or ignore is one record with the count and the first few IDs.
//   - An external plugin reconnecting while its previous connection is
//     still registering waits for it (at most the registration timeout)
//     instead of being refused.
//
// docs/protocol.md section 12 lists the same bounds for plugin authors.
//
// # Policy
//
// With [WithPolicy] or [WithPolicyFile], an administrator's policy
// (package policy, docs/policy.md) grants each plugin what it may change:
// each plugin's own answer is checked against its grant before it is
// merged with the others' (a refusal is the plugin's [FailureDenied],
// under its failure policy, with a *policy.DeniedError), the grant's
// where is ANDed with the plugin's scope, and the plugins it requires,
// with those a pod's required-plugins annotation lists, gate
// RunPodSandbox and CreateContainer ([RequiredPluginError]). A policy
// file is reloaded when it changes ([Adaptation.ReloadPolicy]).
//
// # Metrics
//
// A [MetricsRecorder] ([WithMetricsRecorder]) is told of every request to
// a plugin and of the number of plugins; one that implements
// [RequestRecorder], [DeniedRecorder] and [AuditedRecorder] is told, per
// plugin, what package adaptation/runtimemetrics counts in Prometheus:
// per plugin and request, the counters [MetricRequests], [MetricErrors],
// [MetricTimeouts], [MetricFiltered] and [MetricOptedOut], the histogram
// [MetricRequestSeconds], the gauge [MetricPlugins], and per plugin,
// field and action the changes its grant refused or, in audit mode, let
// through, [MetricDenied]. A plugin that is gone is forgotten (unless
// another plugin of the same name is registered), so plugins coming and
// going do not grow the series. That package is apart so that a runtime
// that does not ask for Prometheus metrics does not link its client (its
// package initialisation alone made an idle runtime process 1.8 MiB
// heavier).
package adaptation
