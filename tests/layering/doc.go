// Package layering checks the layering of the repository's main module that
// docs/internals.md (Layout) describes, from the import declarations of its
// Go files, tests included. The package has no code of its own; its test
// fails on an import that crosses a layer the wrong way:
//
//   - a package under internal/ imports, of this module, only api and other
//     packages under internal/: it is shared by the libraries and the
//     programs, so it may not import any of them (adaptation, stub, ...);
//   - only tests and other test helpers import internal/testing/...;
//   - the libraries (api, stub, adaptation, merge, filter, validator,
//     ocispec, conformance, record) import nothing of the tool (cmd/), the
//     sample plugins (plugins/) or the suites of tests/;
//   - nothing imports tests/.
//
// Where a package lives is otherwise left to the go command's rule for
// internal directories: cmd/nri/internal/ is the nri tool's alone,
// plugins/internal/ the sample plugins'.
package layering
