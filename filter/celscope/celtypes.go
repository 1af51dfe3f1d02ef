package celscope

import (
	"fmt"
	"reflect"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/nrikit/nrikit/api"
)

// CEL type names of the variables pod and container.
const (
	celPodType       = "nrikit.Pod"
	celContainerType = "nrikit.Container"
)

// celFieldNames lists the fields of a CEL object type; ok is false for a
// type that is not one of ours.
func celFieldNames(typeName string) (names []string, ok bool) {
	switch typeName {
	case celPodType:
		return []string{"id", "name", "namespace", "uid", "labels", "annotations", "runtime_handler"}, true
	case celContainerType:
		return []string{"id", "name", "image", "labels", "annotations", "args", "env"}, true
	}
	return nil, false
}

// celFieldType returns the CEL type of a field of one of our object types.
func celFieldType(typeName, field string) (*types.Type, bool) {
	names, ok := celFieldNames(typeName)
	if !ok {
		return nil, false
	}
	found := false
	for _, n := range names {
		found = found || n == field
	}
	if !found {
		return nil, false
	}
	switch field {
	case "labels", "annotations", "env":
		return types.NewMapType(types.StringType, types.StringType), true
	case "args":
		return types.NewListType(types.StringType), true
	default:
		return types.StringType, true
	}
}

// podField returns the native Go value of a field of pod (which may be
// nil): a string, map[string]string or []string.
func podField(pod *api.PodSandbox, field string) (any, bool) {
	switch field {
	case "id":
		return pod.GetId(), true
	case "name":
		return pod.GetName(), true
	case "namespace":
		return pod.GetNamespace(), true
	case "uid":
		return pod.GetUid(), true
	case "labels":
		return nonNilMap(pod.GetLabels()), true
	case "annotations":
		return nonNilMap(pod.GetAnnotations()), true
	case "runtime_handler":
		return pod.GetRuntimeHandler(), true
	}
	return nil, false
}

// containerField returns the native Go value of a field of ctr (which may
// be nil). env is the container's environment as a map; a variable set more
// than once has its last value, one without '=' the empty value.
func containerField(ctr *api.Container, field string) (any, bool) {
	switch field {
	case "id":
		return ctr.GetId(), true
	case "name":
		return ctr.GetName(), true
	case "image":
		return ctr.GetImage().GetName(), true
	case "labels":
		return nonNilMap(ctr.GetLabels()), true
	case "annotations":
		return nonNilMap(ctr.GetAnnotations()), true
	case "args":
		if a := ctr.GetArgs(); a != nil {
			return a, true
		}
		return []string{}, true
	case "env":
		env := make(map[string]string, len(ctr.GetEnv()))
		for _, kv := range ctr.GetEnv() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		return env, true
	}
	return nil, false
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// isSetNative implements has(): a field is set if it is not empty.
func isSetNative(v any) bool {
	switch v := v.(type) {
	case string:
		return v != ""
	case map[string]string:
		return len(v) > 0
	case []string:
		return len(v) > 0
	}
	return false
}

// objField returns a field of the native object behind a pod or container
// value.
func objField(obj any, field string) (any, error) {
	var (
		v  any
		ok bool
	)
	switch o := obj.(type) {
	case *api.PodSandbox:
		v, ok = podField(o, field)
	case *api.Container:
		v, ok = containerField(o, field)
	default:
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	if !ok {
		return nil, fmt.Errorf("no such field %q", field)
	}
	return v, nil
}

// celProvider extends CEL's standard type registry with the object types
// of pod and container.
type celProvider struct {
	*types.Registry
}

// FindStructType implements types.Provider.
func (p celProvider) FindStructType(typeName string) (*types.Type, bool) {
	if _, ok := celFieldNames(typeName); ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(typeName)), true
	}
	return p.Registry.FindStructType(typeName)
}

// FindIdent implements types.Provider: the type names nrikit.Pod and
// nrikit.Container denote the types, for type(pod) == nrikit.Pod.
func (p celProvider) FindIdent(name string) (ref.Val, bool) {
	if _, ok := celFieldNames(name); ok {
		return types.NewObjectType(name), true
	}
	return p.Registry.FindIdent(name)
}

// FindStructFieldNames implements types.Provider.
func (p celProvider) FindStructFieldNames(typeName string) ([]string, bool) {
	if names, ok := celFieldNames(typeName); ok {
		return names, true
	}
	return p.Registry.FindStructFieldNames(typeName)
}

// FindStructFieldType implements types.Provider. The getters work on the
// native *api.PodSandbox and *api.Container behind pod and container.
func (p celProvider) FindStructFieldType(typeName, field string) (*types.FieldType, bool) {
	if _, ours := celFieldNames(typeName); !ours {
		return p.Registry.FindStructFieldType(typeName, field)
	}
	t, ok := celFieldType(typeName, field)
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: t,
		IsSet: func(obj any) bool {
			v, err := objField(obj, field)
			return err == nil && isSetNative(v)
		},
		GetFrom: func(obj any) (any, error) { return objField(obj, field) },
	}, true
}

// NewValue implements types.Provider; pod and container values cannot be
// constructed in expressions.
func (p celProvider) NewValue(typeName string, fields map[string]ref.Val) ref.Val {
	if _, ok := celFieldNames(typeName); ok {
		return types.NewErr("%s values cannot be constructed", typeName)
	}
	return p.Registry.NewValue(typeName, fields)
}

// podVal is the CEL value of the variable pod. Being pointer-shaped, it
// converts to ref.Val without allocating.
type podVal struct{ p *api.PodSandbox }

// ctrVal is the CEL value of the variable container.
type ctrVal struct{ c *api.Container }

func (v podVal) ConvertToNative(t reflect.Type) (any, error) { return convertObj(v.p, t) }
func (v podVal) ConvertToType(t ref.Type) ref.Val            { return convertObjType(v, t) }
func (v podVal) Equal(o ref.Val) ref.Val {
	other, ok := o.(podVal)
	return types.Bool(ok && other.p == v.p)
}
func (v podVal) Type() ref.Type                              { return types.NewObjectType(celPodType) }
func (v podVal) Value() any                                  { return v.p }
func (v podVal) Get(index ref.Val) ref.Val                   { return getField(v.p, index) }
func (v podVal) IsSet(field ref.Val) ref.Val                 { return isSetField(v.p, field) }
func (v ctrVal) ConvertToNative(t reflect.Type) (any, error) { return convertObj(v.c, t) }
func (v ctrVal) ConvertToType(t ref.Type) ref.Val            { return convertObjType(v, t) }
func (v ctrVal) Equal(o ref.Val) ref.Val {
	other, ok := o.(ctrVal)
	return types.Bool(ok && other.c == v.c)
}
func (v ctrVal) Type() ref.Type              { return types.NewObjectType(celContainerType) }
func (v ctrVal) Value() any                  { return v.c }
func (v ctrVal) Get(index ref.Val) ref.Val   { return getField(v.c, index) }
func (v ctrVal) IsSet(field ref.Val) ref.Val { return isSetField(v.c, field) }

func convertObj(obj any, t reflect.Type) (any, error) {
	if reflect.TypeOf(obj) == t {
		return obj, nil
	}
	return nil, fmt.Errorf("type conversion error from %T to %v", obj, t)
}

func convertObjType(v ref.Val, t ref.Type) ref.Val {
	switch t {
	case types.TypeType:
		return v.Type().(ref.Val)
	}
	if t.TypeName() == v.Type().TypeName() {
		return v
	}
	return types.NewErr("type conversion error from %s to %s", v.Type().TypeName(), t.TypeName())
}

func getField(obj any, index ref.Val) ref.Val {
	name, ok := index.(types.String)
	if !ok {
		return types.NewErr("no such key: %v", index)
	}
	v, err := objField(obj, string(name))
	if err != nil {
		return types.NewErr("%v", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

func isSetField(obj any, field ref.Val) ref.Val {
	name, ok := field.(types.String)
	if !ok {
		return types.NewErr("no such key: %v", field)
	}
	v, err := objField(obj, string(name))
	if err != nil {
		return types.NewErr("%v", err)
	}
	return types.Bool(isSetNative(v))
}
