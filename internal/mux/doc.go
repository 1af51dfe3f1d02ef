// Package mux multiplexes several logical byte-stream connections over a
// single "trunk" connection, using the framing of the Node Resource Interface
// (NRI) so that it interoperates with containerd/nri v0.12.x.
//
// NRI runs two ttrpc connections over one socket: connection 1
// ([PluginServiceConn]) carries the Plugin service, with the runtime acting
// as the ttrpc client and the plugin as the server; connection 2
// ([RuntimeServiceConn]) carries the Runtime service, with the plugin acting
// as the client. Connection ID 0 ([ReservedConn]) is never used.
//
// # Wire format
//
// The trunk carries a sequence of frames. Each frame is an 8-byte header
// followed by the payload:
//
//	+----------------------+----------------------+-----------------+
//	| conn ID (uint32, BE) | length (uint32, BE)  | length bytes    |
//	+----------------------+----------------------+-----------------+
//
// For example, the payload "hi" sent on connection 1 is the 10 bytes
//
//	00 00 00 01  00 00 00 02  68 69
//
// and 5 bytes "hello" on connection 2 are
//
//	00 00 00 02  00 00 00 05  68 65 6c 6c 6f
//
// The payload of a frame is at most [DefaultMaxPayload] bytes (the 10-byte
// ttrpc message header plus ttrpc's 4 MiB maximum message size) unless
// changed with [WithMaxPayload]. Writers split larger writes into several
// frames; readers reject a frame whose header announces more, before
// allocating anything for it. A frame with a zero-length payload is legal and
// ignored. There are no control frames: opening or closing a logical
// connection sends nothing on the wire. Frame boundaries carry no meaning;
// each logical connection is a plain byte stream.
//
// # Usage
//
// Both ends wrap the trunk with [New]. The side acting as a ttrpc server for
// a connection ID passes [Mux.Listen] to ttrpc's Server.Serve; the side
// acting as the client passes the result of [Mux.Open] to ttrpc.NewClient.
//
// A Mux owns exactly one goroutine, which reads the trunk and distributes
// frames to the logical connections. It stops when [Mux.Close] is called or
// the trunk fails; [Mux.Done] and [Mux.Err] report that and why.
package mux
