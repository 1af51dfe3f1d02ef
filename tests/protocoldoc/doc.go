// Package protocoldoc keeps docs/protocol.md honest: its test captures a
// real RegisterPlugin exchange between nrikit's stub and nrikit's runtime
// and regenerates the byte-level walkthrough of section 14 from it, so the
// document cannot drift from the implementation.
//
// Run `go test ./tests/protocoldoc -update` to rewrite the section after
// an intentional change.
package protocoldoc
