package api

import (
	"os"
	"slices"
)

// Optional value wrappers.
//
// The constructors below accept the same argument types as upstream's, so
// code ported from containerd/nri compiles unchanged: the plain value, a
// pointer to it (nil yields nil), or another wrapper of the same kind (nil
// yields nil, otherwise a copy). An argument of any other type yields nil.

// String returns an OptionalString for a string, *string or *OptionalString.
func String(v any) *OptionalString {
	return newOptional(v, func(x string) *OptionalString { return &OptionalString{Value: x} }, acceptOrPtr(identity[string]))
}

// RepeatedString returns an OptionalRepeatedString holding a copy of a
// []string, *[]string or *OptionalRepeatedString.
func RepeatedString(v any) *OptionalRepeatedString {
	return newOptional(v, func(x []string) *OptionalRepeatedString { return &OptionalRepeatedString{Value: slices.Clone(x)} },
		acceptOrPtr(identity[[]string]))
}

// Int returns an OptionalInt for an int, *int or *OptionalInt.
func Int(v any) *OptionalInt {
	return newOptional(v, func(x int64) *OptionalInt { return &OptionalInt{Value: x} }, acceptOrPtr(convert[int64, int]))
}

// Int32 returns an OptionalInt32 for an int32, *int32 or *OptionalInt32.
func Int32(v any) *OptionalInt32 {
	return newOptional(v, func(x int32) *OptionalInt32 { return &OptionalInt32{Value: x} }, acceptOrPtr(identity[int32]))
}

// UInt32 returns an OptionalUInt32 for a uint32, *uint32 or *OptionalUInt32.
func UInt32(v any) *OptionalUInt32 {
	return newOptional(v, func(x uint32) *OptionalUInt32 { return &OptionalUInt32{Value: x} }, acceptOrPtr(identity[uint32]))
}

// Int64 returns an OptionalInt64 for an int, uint, int64 or uint64 (unsigned
// values are converted), a *int64 or *uint64, or an *OptionalInt64.
func Int64(v any) *OptionalInt64 {
	return newOptional(v, func(x int64) *OptionalInt64 { return &OptionalInt64{Value: x} },
		accept(convert[int64, int]), accept(convert[int64, uint]), acceptOrPtr(identity[int64]), acceptOrPtr(convert[int64, uint64]))
}

// UInt64 returns an OptionalUInt64 for an int, uint, int64 or uint64 (signed
// values are converted), a *int64 or *uint64, or an *OptionalUInt64.
func UInt64(v any) *OptionalUInt64 {
	return newOptional(v, func(x uint64) *OptionalUInt64 { return &OptionalUInt64{Value: x} },
		accept(convert[uint64, int]), accept(convert[uint64, uint]), acceptOrPtr(convert[uint64, int64]), acceptOrPtr(identity[uint64]))
}

// Bool returns an OptionalBool for a bool, *bool or *OptionalBool.
func Bool(v any) *OptionalBool {
	return newOptional(v, func(x bool) *OptionalBool { return &OptionalBool{Value: x} }, acceptOrPtr(identity[bool]))
}

// FileMode returns an OptionalFileMode for an os.FileMode, *os.FileMode,
// uint32 or *OptionalFileMode.
func FileMode(v any) *OptionalFileMode {
	return newOptional(v, func(x uint32) *OptionalFileMode { return &OptionalFileMode{Value: x} },
		acceptOrPtr(convert[uint32, os.FileMode]), accept(identity[uint32]))
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalString) Get() *string { return optionalGet(o != nil, o.GetValue()) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalRepeatedString) Get() *[]string {
	return optionalGet(o != nil, slices.Clone(o.GetValue()))
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt) Get() *int { return optionalGet(o != nil, int(o.GetValue())) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt32) Get() *int32 { return optionalGet(o != nil, o.GetValue()) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalUInt32) Get() *uint32 { return optionalGet(o != nil, o.GetValue()) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt64) Get() *int64 { return optionalGet(o != nil, o.GetValue()) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalUInt64) Get() *uint64 { return optionalGet(o != nil, o.GetValue()) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalBool) Get() *bool { return optionalGet(o != nil, o.GetValue()) }

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalFileMode) Get() *os.FileMode {
	return optionalGet(o != nil, os.FileMode(o.GetValue()))
}

// newOptional is the body of every Optional* constructor: for a wrapper of
// the kind W that mk makes, a copy (nil for nil); otherwise the wrapper of
// the value the first of accepts finds in v, nil if none does.
func newOptional[V any, W interface {
	*O
	GetValue() V
}, O any](v any, mk func(V) W, accepts ...func(any) (V, bool)) W {
	if w, ok := v.(W); ok {
		if w == nil {
			return nil
		}
		return mk(w.GetValue())
	}
	for _, a := range accepts {
		if x, ok := a(v); ok {
			return mk(x)
		}
	}
	return nil
}

// accept accepts an argument of type A, converted by c.
func accept[A, V any](c func(A) V) func(any) (V, bool) {
	return func(v any) (V, bool) {
		a, ok := v.(A)
		if !ok {
			var zero V
			return zero, false
		}
		return c(a), true
	}
}

// acceptOrPtr accepts an argument of type A or a non-nil *A, converted by c.
func acceptOrPtr[A, V any](c func(A) V) func(any) (V, bool) {
	return func(v any) (V, bool) {
		if p, ok := v.(*A); ok && p != nil {
			return c(*p), true
		}
		return accept(c)(v)
	}
}

// identity is the identity conversion.
func identity[T any](x T) T { return x }

// optionalInteger are the integer types of the wrappers and their arguments.
type optionalInteger interface {
	~int | ~uint | ~int32 | ~uint32 | ~int64 | ~uint64
}

// convert converts between integer types.
func convert[V, A optionalInteger](a A) V { return V(a) }

// optionalGet returns a pointer to v, or nil if the wrapper is not set.
func optionalGet[T any](set bool, v T) *T {
	if !set {
		return nil
	}
	return &v
}
