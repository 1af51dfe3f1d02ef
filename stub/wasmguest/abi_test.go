//go:build !wasip1

package wasmguest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
)

// TestExportsAreTheABIs ties the module's exports to the ABI's single
// definition (internal/wasmabi): Go's //go:wasmexport directives cannot
// name a constant, so exports_wasip1.go (the requests that are not
// events) and exports_generated.go (the events', generated from the event
// table) spell the names out, and this test reads them back. Every request function of the ABI is exported,
// nothing else is but plugin_api_version, malloc, free and the marker
// of a guest that handles Synchronize in parts, and each request export
// serves the request it is named for.
func TestExportsAreTheABIs(t *testing.T) {
	fset := token.NewFileSet()
	var decls []ast.Decl
	for _, name := range []string{"exports_wasip1.go", "exports_generated.go"} {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	funcs := map[string]string{
		"FuncConfigure": FuncConfigure, "FuncSynchronize": FuncSynchronize, "FuncShutdown": FuncShutdown,
		"FuncRunPod": FuncRunPod, "FuncUpdatePod": FuncUpdatePod, "FuncPostUpdatePod": FuncPostUpdatePod,
		"FuncStopPod": FuncStopPod, "FuncRemovePod": FuncRemovePod, "FuncCreateContainer": FuncCreateContainer,
		"FuncPostCreate": FuncPostCreate, "FuncStartContainer": FuncStartContainer, "FuncPostStart": FuncPostStart,
		"FuncUpdateContainer": FuncUpdateContainer, "FuncPostUpdate": FuncPostUpdate, "FuncStopContainer": FuncStopContainer,
		"FuncRemoveContainer": FuncRemoveContainer, "FuncStateChange": FuncStateChange, "FuncValidate": FuncValidate,
	}
	for _, e := range api.Events() {
		funcs["Func"+e.Name()] = wasmabi.EventFunc(e)
	}
	var exported, imported []string
	for _, decl := range decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Doc == nil {
			continue
		}
		for _, c := range fd.Doc.List {
			if name, ok := strings.CutPrefix(c.Text, "//go:wasmimport "); ok {
				imported = append(imported, name)
			}
			name, ok := strings.CutPrefix(c.Text, "//go:wasmexport ")
			if !ok {
				continue
			}
			exported = append(exported, name)
			if !wasmabi.IsFunc(name) {
				continue
			}
			// The body is `return answer(FuncX, ptr, size)`.
			var served string
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "answer" && len(call.Args) > 0 {
						if arg, ok := call.Args[0].(*ast.Ident); ok {
							served = funcs[arg.Name]
						}
					}
				}
				return true
			})
			if served != name {
				t.Errorf("export %s (func %s) serves %q", name, fd.Name.Name, served)
			}
		}
	}
	want := append(wasmabi.Funcs(), wasmabi.ExportAPIVersion, wasmabi.ExportMalloc, wasmabi.ExportFree, wasmabi.ExportSplitSynchronize)
	slices.Sort(exported)
	slices.Sort(want)
	if !slices.Equal(exported, want) {
		t.Errorf("the module exports\n%v\nthe ABI has\n%v", exported, want)
	}
	if wantImport := wasmabi.HostModule + " " + wasmabi.HostLog; !slices.Equal(imported, []string{wantImport}) {
		t.Errorf("the module imports %v, want only %q", imported, wantImport)
	}
}
