// Package tooci proves the ToOCI conversions of nrikit's api package (the
// methods and functions a runtime written for upstream calls, such as
// CRI-O's LinuxResources.ToOCI on a plugin's container update) against
// upstream's (containerd/nri v0.12.5): messages generated at random, and
// by the fuzzer, are encoded once and decoded into both packages' types;
// both conversions must give deeply equal OCI values, nil and empty
// slices told apart.
//
// The one deliberate difference: a nil element of a repeated field (which
// protobuf decoding never produces) converts to the zero value in nrikit
// and panics in upstream; the generator produces none.
package tooci
