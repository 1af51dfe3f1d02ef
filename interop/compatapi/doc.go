// Package compatapi checks that compat/nri, the module that replaces
// github.com/containerd/nri so that runtimes and plugins adopt nrikit
// with a replace directive, offers what upstream v0.12.5's packages
// export: every exported top-level name, every exported method and
// field of an exported type, with the same kind and signature, and the
// same constant values, for linux, windows, darwin and wasip1 (package
// internal/apidiff). What compat leaves out on purpose is in the test's
// exclusion table, each with its reason.
package compatapi
