// Package layering checks the layering of the repository's main module that
// docs/internals.md (Layout) describes, from the import declarations of its
// Go files, tests included. The package has no code of its own; its test
// fails on an import that crosses a layer the wrong way:
//
//   - a package under internal/ imports, of this module, only api and other
//     packages under internal/: it is shared by the libraries and the
//     programs, so it may not import any of them (adaptation, stub, ...);
//   - a test helper under internal/testing/ imports, besides internal/,
//     only the libraries, and only tests and other test helpers import it;
//   - the libraries (api, stub, adaptation, merge, filter, validator,
//     policy, identity, ocispec, conformance, record) import nothing of the tool
//     (cmd/), the sample plugins (plugins/) or the suites of tests/;
//   - api's code (the protocol; tests aside) imports nothing of this
//     module but api/..., and stub/handler's (the handler interfaces,
//     shared by the stub and the WASM guest) only api;
//   - a sample plugin's code (plugins/, tests aside) imports only api, stub,
//     ocispec, record (the recorder), internal/yamldoc and plugins/ (their
//     plugins/internal/);
//   - nothing imports tests/.
//
// TestReadmeLayout holds README.md's Layout table to the tree: every package
// directory, module and top-level directory is named in it, and every path
// it names exists.
//
// Where a package lives is otherwise left to the go command's rule for
// internal directories: cmd/nri/internal/ is the nri tool's alone,
// plugins/internal/ the sample plugins'.
package layering
