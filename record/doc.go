// Package record is the file format of nrikit's NRI traffic recordings
// (docs/record.md): what `nri record` (the recorder plugin,
// plugins/recorder) and a recording runtime (adaptation.WithRecorder,
// through package record/runtimerec) write, and what `nri replay` reads.
//
// A recording is one file, or a set of files rotated as it grew. Each
// file is a gzip stream of a magic line and length-prefixed protobuf
// records: a [recordpb.Header] first, then [recordpb.Record]s, each
// carrying one protocol message (nrikit/nri.proto) encoded, whose type the
// record's kind and event name through the protocol's Plugin service
// ([MessageType]): no list of events is kept here.
//
// [Writer] writes a recording with a size cap and rotation, creating
// files 0600. [Reader] reads one, bounding every length and count a
// hostile file controls before allocating for it. [Redactor] replaces the
// values of environment variables and annotations by keyed hashes, so
// that a recording holds no secret a pod carries while equal values still
// compare equal. [Recorder] is a plugin's handlers that record every
// event into a Writer without ever failing or changing a request.
package record
