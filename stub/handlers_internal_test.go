package stub

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strings"
	"testing"
)

// TestHandlerDocs checks that the doc comment of each of the stub's
// handler interfaces, aliases of the single definitions in
// stub/internal/handlers, shows the method as it is defined there, and
// that every interface defined there has its alias here.
func TestHandlerDocs(t *testing.T) {
	fset := token.NewFileSet()
	defs, err := parser.ParseFile(fset, "internal/handlers/handlers.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]string{} // interface -> its method, as in the docs
	for _, d := range defs.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			ts := sp.(*ast.TypeSpec)
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok {
				continue
			}
			if len(it.Methods.List) != 1 {
				t.Fatalf("handlers.%s has %d methods, want one", ts.Name.Name, len(it.Methods.List))
			}
			m := it.Methods.List[0]
			var b bytes.Buffer
			if err := printer.Fprint(&b, fset, m.Type); err != nil {
				t.Fatal(err)
			}
			methods[ts.Name.Name] = m.Names[0].Name + strings.TrimPrefix(b.String(), "func")
		}
	}
	aliases, err := parser.ParseFile(fset, "handlers.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range aliases.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			ts := sp.(*ast.TypeSpec)
			sel, ok := ts.Type.(*ast.SelectorExpr)
			if !ts.Assign.IsValid() || !ok || sel.Sel.Name != ts.Name.Name {
				t.Errorf("%s is not an alias of handlers.%s", ts.Name.Name, ts.Name.Name)
				continue
			}
			seen[ts.Name.Name] = true
			want, ok := methods[ts.Name.Name]
			if !ok {
				t.Errorf("%s: handlers defines no such interface", ts.Name.Name)
				continue
			}
			if doc := ts.Doc.Text(); !strings.Contains(doc, "\t"+want+"\n") {
				t.Errorf("the doc of %s does not show its method\n\t%s\ndoc:\n%s", ts.Name.Name, want, doc)
			}
		}
	}
	for name := range methods {
		if !seen[name] {
			t.Errorf("handlers.%s has no alias in package stub", name)
		}
	}
}
