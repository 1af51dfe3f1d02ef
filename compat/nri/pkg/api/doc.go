// Package api is upstream's github.com/containerd/nri/pkg/api on nrikit:
// the protocol's messages and helpers. Its types are aliases of nrikit's
// api types, which are generated from the same schema and encode
// identically on the wire, so a value of this package is a value of
// nrikit's and can be handed to nrikit's libraries as is.
//
// aliases.go forwards every name that upstream's package exports and
// nrikit's api declares too; the other files provide, written for this
// module, the upstream names that nrikit's api lacks and that runtimes
// use (conversions from the OCI runtime spec, upstream's timeout
// constants). Upstream names used by no runtime (the WASM plugin host,
// protobuf codec internals) are not provided.
package api

//go:generate go run ../../internal/genaliases -api ../../../../api -names ../../internal/genaliases/upstream-api-names.txt -out aliases.go
