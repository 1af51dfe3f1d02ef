package apidiff

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"testing"
)

// check type-checks one file as package path.
func check(t *testing.T, path, src string, imports ...*types.Package) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path+".go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importerFunc(func(p string) (*types.Package, error) {
		for _, imp := range imports {
			if imp.Path() == p {
				return imp, nil
			}
		}
		t.Fatalf("unexpected import %s", p)
		return nil, nil
	})}
	pkg, err := conf.Check(path, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

const upstreamSrc = `package p

type Msg struct{ Name string; Size int }
func (m *Msg) GetName() string { return m.Name }
type Handler interface{ Handle(*Msg) error }
type Mask int
func (m *Mask) Set(v int) *Mask { return m }
const Domain = "example.dev"
const Limit = 3
var Default = &Msg{}
func New(name string, opts ...int) (*Msg, error) { return nil, nil }
func Same(m *Msg) Handler { return nil }
type Option func(*options) error
type options struct{}
type Gone int
func Parse(v interface{}) *Msg { return nil }
`

// other declares Msg, Handler and Mask as aliases of types in package
// q, as compat aliases nrikit's, and differs from upstreamSrc as the
// test's findings say.
const otherSrc = `package p

import "q"

type Msg = q.Msg
type Handler = q.Handler
type Mask = q.Mask
const Domain = "other.dev"
const Limit = 3
var Default = &Msg{}
var New = func(name string, opts ...string) (*Msg, error) { return nil, nil }
func Same(m *Msg) Handler { return nil }
type Option func(*config) error
type config struct{}
func Parse(v any) *Msg { return nil }
`

const qSrc = `package q

type Msg struct{ Name string }
type Handler interface{ Handle(*Msg) error; Close() }
type Mask int
func (m Mask) Set(v int) Mask { return m }
`

// TestCompare: each kind of difference is found, once, and what only
// differs in names users cannot see (aliases, unexported types,
// parameter names, interface{} and any) is not.
func TestCompare(t *testing.T) {
	up := check(t, "p", upstreamSrc)
	q := check(t, "q", qSrc)
	other := check(t, "p", otherSrc, q)
	got := newComparer().comparePackages("pkg/p", up, other)
	want := []Finding{
		{"pkg/p.Domain", `value "example.dev" upstream, "other.dev" in compat`},
		{"pkg/p.Gone", "missing"},
		{"pkg/p.Handler.Close", "method of compat's interface only: upstream's implementations lack it"},
		{"pkg/p.Mask.Set", "signature func(int) *Mask upstream, func(int) Mask in compat"},
		{"pkg/p.Msg.GetName", "method missing"},
		{"pkg/p.Msg.Size", "field missing"},
		{"pkg/p.New", "signature func(string, ...int) (*Msg, error) upstream, func(string, ...string) (*Msg, error) in compat"},
	}
	sortFindings(got)
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%v\nwant:\n%v", got, want)
	}
	// A type re-exported by a second package is compared once.
	c := newComparer()
	c.comparePackages("pkg/p", up, other)
	if again := c.comparePackages("pkg/p", up, other); len(again) != 3 { // Domain, Gone, New: not members
		t.Errorf("second comparison of the same types: %v, want only the package-level findings", again)
	}
}
