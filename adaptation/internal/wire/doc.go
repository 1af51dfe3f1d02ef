// Package wire is the runtime's handling of a plugin connection's bytes,
// below the endpoint that owns the connection (package adaptation's
// connEndpoint) and above the multiplexer (internal/mux):
//
//   - framing: [Conn] follows the ttrpc messages of one logical
//     connection as they are read and written, checks each message's
//     length on its header and ttrpc's envelope of each request and
//     response as its bytes pass ([HeaderSize]); a [WriteSignal] tells
//     when an answer has left;
//   - the in-flight bound: a [Gate] holds the reading of a plugin's
//     further Runtime-service requests while too many, or too many bytes
//     of them, are unanswered;
//   - the shared encoding: [Shared] encodes what the requests of one
//     event to several plugins have in common once, by hand for pods and
//     containers (internal/fastencode), into recycled [Buffer]s, and
//     [CallPayload] and [SendEncoded] send those bytes as ttrpc's payload
//     without copying them;
//   - Synchronize in parts: [SyncParts] yields a snapshot split into
//     requests within a size limit ([SplitSync]), encoded ahead of the
//     call for a connected plugin ([EncodedSyncParts]).
//
// What it guarantees, against a peer that does not play by the rules:
// every size a plugin sends is bounded before the runtime allocates for
// it. A message's length is checked against the limit the [Conn] is
// given on its 10-byte header, before ttrpc allocates the message; the
// envelope of a request or response (metadata, status details) is
// scanned against internal/wirelimit's bounds before ttrpc decodes it;
// and while a [Gate] is full nothing more is read, so a plugin's
// unanswered requests hold at most the gate's count and bytes. What the
// runtime sends is protobuf-go's encoding byte for byte (fields in order
// of number), however it was made.
//
// The package holds no global state but a sync.Pool of encoding buffers
// (bounded: a buffer above 64 KiB is not kept).
package wire
