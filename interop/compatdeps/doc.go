// Package compatdeps checks that adopting compat/nri raises no dependency
// of the adopter beyond what upstream v0.12.5 brings, except modules
// nrikit's own code uses: it builds one module (testdata/adopter, shaped
// like nri-plugins' topology-aware) on both, compares the versions their
// module graphs select, and runs both builds.
package compatdeps
