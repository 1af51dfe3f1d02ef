package apidiff

import (
	"fmt"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// A Finding is one way the other package differs from upstream's.
type Finding struct {
	// Key names the identifier: the package's path in its module ("nri"
	// for the root package), then the name, then a member's name
	// ("pkg/stub.Stub.Logger").
	Key string `json:"key"`
	// What says how it differs ("method missing").
	What string `json:"what"`
}

func (f Finding) String() string { return f.Key + ": " + f.What }

// A comparer compares the packages of one platform. The members of a type
// are compared once, under the first package that names it (upstream's
// pkg/adaptation re-exports pkg/api's types).
type comparer struct {
	seen map[*types.TypeName]bool
}

func newComparer() *comparer { return &comparer{seen: map[*types.TypeName]bool{}} }

// comparePackages lists what compat's package cp lacks or declares
// differently from upstream's package up; rel is the packages' path in
// their module ("pkg/api", "" for the root package).
func (c *comparer) comparePackages(rel string, up, cp *types.Package) []Finding {
	prefix := relKey(rel)
	var fs []Finding
	for _, name := range up.Scope().Names() {
		if !token.IsExported(name) {
			continue
		}
		key := prefix + "." + name
		uo, co := up.Scope().Lookup(name), cp.Scope().Lookup(name)
		if co == nil {
			fs = append(fs, Finding{key, "missing"})
			continue
		}
		fs = append(fs, c.compareObjects(key, uo, co)...)
	}
	return fs
}

// compareObjects compares two package-level objects of the same name.
func (c *comparer) compareObjects(key string, uo, co types.Object) []Finding {
	switch uo := uo.(type) {
	case *types.TypeName:
		if _, ok := co.(*types.TypeName); !ok {
			return []Finding{{key, "a type upstream, " + kind(co) + " in compat"}}
		}
		if n, ok := types.Unalias(uo.Type()).(*types.Named); ok {
			if c.seen[n.Obj()] {
				return nil
			}
			c.seen[n.Obj()] = true
		}
		return compareTypes(key, uo.Type(), co.Type())
	case *types.Const:
		c, ok := co.(*types.Const)
		if !ok {
			return []Finding{{key, "a constant upstream, " + kind(co) + " in compat"}}
		}
		var fs []Finding
		if u, k := typeString(uo.Type()), typeString(c.Type()); u != k {
			fs = append(fs, Finding{key, fmt.Sprintf("constant of type %s upstream, %s in compat", u, k)})
		}
		if u, k := uo.Val().ExactString(), c.Val().ExactString(); u != k {
			fs = append(fs, Finding{key, fmt.Sprintf("value %s upstream, %s in compat", u, k)})
		}
		return fs
	case *types.Func:
		// compat forwards a function as a variable of the function's
		// type: calls compile alike.
		switch co.(type) {
		case *types.Func, *types.Var:
		default:
			return []Finding{{key, "a function upstream, " + kind(co) + " in compat"}}
		}
		return compareSignatures(key, uo.Type(), co.Type())
	case *types.Var:
		if _, ok := co.(*types.Var); !ok {
			return []Finding{{key, "a variable upstream, " + kind(co) + " in compat"}}
		}
		if u, k := typeString(uo.Type()), typeString(co.Type()); u != k {
			return []Finding{{key, fmt.Sprintf("type %s upstream, %s in compat", u, k)}}
		}
	}
	return nil
}

// compareTypes compares two named (or aliased) types: their kind, the
// exported fields of a struct, the methods of an interface (all of them
// in compat's: an extra one breaks the plugins that implement it), the
// exported methods of other types, and the underlying type of the rest.
func compareTypes(key string, ut, ct types.Type) []Finding {
	ut, ct = types.Unalias(ut), types.Unalias(ct)
	uu, cu := ut.Underlying(), ct.Underlying()
	if uk, ck := shape(uu), shape(cu); uk != ck {
		return []Finding{{key, fmt.Sprintf("%s upstream, %s in compat", uk, ck)}}
	}
	var fs []Finding
	switch uu := uu.(type) {
	case *types.Interface:
		cu := cu.(*types.Interface)
		for m := range uu.Methods() {
			if !m.Exported() {
				continue
			}
			fs = append(fs, compareMethod(key+"."+m.Name(), m, lookupMethod(cu, m.Name()))...)
		}
		for m := range cu.Methods() {
			if lookupMethod(uu, m.Name()) == nil {
				fs = append(fs, Finding{key + "." + m.Name(), "method of compat's interface only: upstream's implementations lack it"})
			}
		}
		return fs
	case *types.Struct:
		cs := cu.(*types.Struct)
		for f := range uu.Fields() {
			if !f.Exported() {
				continue
			}
			fkey := key + "." + f.Name()
			cf := lookupField(cs, f.Name())
			if cf == nil {
				fs = append(fs, Finding{fkey, "field missing"})
				continue
			}
			if u, k := typeString(f.Type()), typeString(cf.Type()); u != k {
				fs = append(fs, Finding{fkey, fmt.Sprintf("field of type %s upstream, %s in compat", u, k)})
			}
		}
	default:
		if u, k := typeString(uu), typeString(cu); u != k {
			fs = append(fs, Finding{key, fmt.Sprintf("underlying type %s upstream, %s in compat", u, k)})
		}
	}
	// The methods callable on a variable of the type (the pointer's set).
	ums := types.NewMethodSet(types.NewPointer(ut))
	cms := types.NewMethodSet(types.NewPointer(ct))
	for sel := range ums.Methods() {
		m := sel.Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		var cm *types.Func
		if s := cms.Lookup(nil, m.Name()); s != nil {
			cm = s.Obj().(*types.Func)
		}
		fs = append(fs, compareMethod(key+"."+m.Name(), m, cm)...)
	}
	return fs
}

func compareMethod(key string, um, cm *types.Func) []Finding {
	if cm == nil {
		return []Finding{{key, "method missing"}}
	}
	return compareSignatures(key, um.Type(), cm.Type())
}

func compareSignatures(key string, ut, ct types.Type) []Finding {
	us, ok1 := ut.Underlying().(*types.Signature)
	cs, ok2 := ct.Underlying().(*types.Signature)
	if !ok1 || !ok2 {
		return []Finding{{key, fmt.Sprintf("type %s upstream, %s in compat", typeString(ut), typeString(ct))}}
	}
	if u, k := signatureString(us), signatureString(cs); u != k {
		return []Finding{{key, fmt.Sprintf("signature %s upstream, %s in compat", u, k)}}
	}
	return nil
}

func lookupMethod(it *types.Interface, name string) *types.Func {
	for m := range it.Methods() {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

func lookupField(s *types.Struct, name string) *types.Var {
	for f := range s.Fields() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// kind names an object's kind for messages.
func kind(o types.Object) string {
	switch o.(type) {
	case *types.TypeName:
		return "a type"
	case *types.Const:
		return "a constant"
	case *types.Func:
		return "a function"
	case *types.Var:
		return "a variable"
	}
	return fmt.Sprintf("%T", o)
}

// shape names the kind of an underlying type.
func shape(t types.Type) string {
	switch t.(type) {
	case *types.Struct:
		return "a struct"
	case *types.Interface:
		return "an interface"
	case *types.Signature:
		return "a function type"
	}
	return "a " + strings.TrimPrefix(fmt.Sprintf("%T", t), "*types.") + " type"
}

// signatureString writes a signature without parameter names, which
// callers do not see.
func signatureString(s *types.Signature) string {
	var b strings.Builder
	b.WriteString("func(")
	for i := range s.Params().Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := s.Params().At(i).Type()
		if s.Variadic() && i == s.Params().Len()-1 {
			b.WriteString("..." + typeString(t.(*types.Slice).Elem()))
			continue
		}
		b.WriteString(typeString(t))
	}
	b.WriteString(")")
	switch n := s.Results().Len(); n {
	case 0:
	case 1:
		b.WriteString(" " + typeString(s.Results().At(0).Type()))
	default:
		b.WriteString(" (")
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(typeString(s.Results().At(i).Type()))
		}
		b.WriteString(")")
	}
	return b.String()
}

// typeString writes a type with named types by their name alone: compat's
// types are aliases of nrikit's, declared in other packages under the
// same names. Unexported named types, which users can neither name nor
// construct, are written as "unexported"; interface{} as any.
func typeString(t types.Type) string {
	var b strings.Builder
	writeType(&b, t)
	return b.String()
}

func writeType(b *strings.Builder, t types.Type) {
	if a, ok := t.(*types.Alias); ok && a.Obj().Exported() && a.Obj().Pkg() != nil {
		// By the name the declaration gives (compat's aliases name
		// nrikit's types as upstream names its own).
		b.WriteString(a.Obj().Name())
		return
	}
	if n, ok := types.Unalias(t).(*types.Named); ok && !n.Obj().Exported() && n.Obj().Pkg() != nil {
		b.WriteString("unexported")
		return
	}
	switch t := types.Unalias(t).(type) {
	case *types.Pointer:
		b.WriteString("*")
		writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		writeType(b, t.Key())
		b.WriteString("]")
		writeType(b, t.Elem())
	case *types.Chan:
		b.WriteString(strings.TrimSuffix(types.TypeString(types.NewChan(t.Dir(), types.Typ[types.Int]), nil), "int"))
		writeType(b, t.Elem())
	case *types.Signature:
		b.WriteString(signatureString(t))
	case *types.Interface:
		if t.Empty() {
			b.WriteString("any")
			return
		}
		b.WriteString(types.TypeString(t, func(*types.Package) string { return "" }))
	default:
		b.WriteString(types.TypeString(t, func(*types.Package) string { return "" }))
	}
}

func sortFindings(fs []Finding) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Key != fs[j].Key {
			return fs[i].Key < fs[j].Key
		}
		return fs[i].What < fs[j].What
	})
}
