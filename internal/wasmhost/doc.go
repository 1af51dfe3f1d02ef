// Package wasmhost runs NRI plugins compiled to WebAssembly in-process
// with wazero, with the ABI of upstream NRI's WASM plugins
// (docs/wasm-abi.md): one module per plugin, its requests and responses
// exchanged as protobuf bytes through the module's linear memory.
//
// [Load] checks a module file, compiles it (through an on-disk
// compilation cache if [Options.CacheDir] is set, so a later load of the
// same module in another process skips compilation), checks its exports
// and API version and instantiates it. [Plugin.Call] runs one request,
// bounded by its context. A call that traps, exits the guest (a Go guest
// that panics or runs out of memory exits), times out or answers out of
// bounds discards the instance: the next call gets a fresh instance,
// after [Options.Reinit] replayed what the plugin must know (its
// Configure request). A guest that answers an error string keeps its
// instance, and so does one whose answer is larger than the call accepts
// ([Options.MaxMessageSize], [Options.MaxAnswerSize]: the answer is not
// read) or holds more than the host decodes ([Plugin.DecodeAnswer]). The
// guest's stdout, stderr and env.log messages go to the plugin's logger
// (also those of its initialisation), line by line, each cut to 8 KiB
// with a note of its length; how many it may log is its logger's
// business (the adaptation's is rate-limited per plugin).
//
// Instances: a Plugin holds at most one instance and serves one call at
// a time (NRI calls a plugin sequentially); a call waiting for another
// waits at most until its context is done. The memory limit
// ([Options.MemoryLimitPages]) applies to each instance. On Linux an
// instance's linear memory is a mapping of its own that reserves the
// limit without using it and grows in place (linearmem_linux.go): wazero's
// default, a Go slice, copies the whole memory each time it grows past
// its capacity. A mapping that wazero frees while a call still runs (a
// module closed under it) is unmapped once the call has returned. Plugins loaded
// with the same [Cache] share the compiled form of identical modules (and
// its wazero runtime); a plugin without one has its own.
//
// Cost, measured with testdata/measure on an 8 MB Go guest (amd64): the
// first plugin of a module adds about 60 MB of RSS (about 30 MB of
// machine code, 15 MB of decoded module, 9 MB of instance, mostly the Go
// guest's heap); each further plugin of the same module with a shared
// Cache about 10-14 MB (docs/benchmarks.md, "WASM plugins", measures it in a
// runtime process: 13.9 MiB, against 54 MiB on upstream's runtime).
// Loading takes 2.5-4 s when the module is compiled, 0.15-0.2 s from the
// on-disk cache. A compilation leaves about 70 MB of the heap free,
// which is returned to the system when it ends (debug.FreeOSMemory, one
// collection) rather than kept resident until later collections. Calls are bounded by their context through wazero's
// close-on-context-done, which in wazero v1.12 exits from the machine code
// to Go at every loop header: about three quarters of a Go guest's call
// (testdata/termcost measures it; docs/benchmarks.md has the figures).
// With [Options.FuelChecks] they are bounded instead by counters the
// module is instrumented with (internal/wasmfuel), which call the host
// only every 65536 loop headers and function entries: the same bound at
// about a third of the guest's time.
//
// Files: the module file is opened once, without blocking (a FIFO
// cannot hang it), checked through its descriptor (a regular file of at
// most [Options.MaxModuleSize] bytes, 64 MiB by default; with
// [Options.TrustedFile], owned by root or the effective user and not
// writable by its group or others) and read through that limit. The
// on-disk compilation cache runs the machine code it finds, so its
// directory must be trusted ([CheckCacheDir]: not a symbolic link, owned
// by root or the effective user, not writable by its group or others,
// nor the directories above it), and each module's entries are sealed
// with the module they were compiled from: an entry that does not match
// its seal (one copied from another module's directory, say) is deleted
// and the module compiled again. Checking the seal reads an entry once
// more (about 24 ms of CPU for the 29 MB entry of an 8 MB Go guest) until
// the seal records its stamp (inode, size, times: a write or replacement
// changes its change time), and then only when the stamp changed. A
// module instrumented for [Options.FuelChecks] is kept, sealed, beside
// its entries, so a start from a filled cache does not instrument it
// again.
// A compilation stops within a fraction of a second of its context's
// end: wazero checks the context between functions when it compiles with
// two workers (with one, its default, it runs to the end).
//
// Unlike upstream, a module file that is not executable is loaded (with
// a log line saying that upstream would skip it): the file's mode is the
// plugin directory's business, and c-shared output is 0644.
//
// Built with the tag nri_no_wasm, the package has the same API without
// wazero: [Load] returns [ErrDisabled].
package wasmhost
