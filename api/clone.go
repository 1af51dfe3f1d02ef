package api

import (
	"maps"
	"os"
	"slices"

	"google.golang.org/protobuf/proto"
)

// Clone returns a deep copy of m (nil for a nil m).
func Clone[M proto.Message](m M) M {
	c, _ := proto.Clone(m).(M)
	return c
}

// Copy returns a deep copy of the resources (nil for nil).
func (r *LinuxResources) Copy() *LinuxResources {
	if r == nil {
		return nil
	}
	return Clone(r)
}

// DupStringSlice returns a copy of in (nil for nil).
func DupStringSlice(in []string) []string {
	return slices.Clone(in)
}

// DupStringMap returns a copy of in (nil for nil).
func DupStringMap(in map[string]string) map[string]string {
	return maps.Clone(in)
}

// Optional value wrappers.
//
// The constructors below accept the same argument types as upstream's, so
// code ported from containerd/nri compiles unchanged: the plain value, a
// pointer to it (nil yields nil), or another wrapper of the same kind (nil
// yields nil, otherwise a copy). An argument of any other type yields nil.

// String returns an OptionalString for a string, *string or *OptionalString.
func String(v any) *OptionalString {
	switch o := v.(type) {
	case string:
		return &OptionalString{Value: o}
	case *string:
		if o != nil {
			return &OptionalString{Value: *o}
		}
	case *OptionalString:
		if o != nil {
			return &OptionalString{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalString) Get() *string {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// RepeatedString returns an OptionalRepeatedString holding a copy of a
// []string, *[]string or *OptionalRepeatedString.
func RepeatedString(v any) *OptionalRepeatedString {
	switch o := v.(type) {
	case []string:
		return &OptionalRepeatedString{Value: slices.Clone(o)}
	case *[]string:
		if o != nil {
			return &OptionalRepeatedString{Value: slices.Clone(*o)}
		}
	case *OptionalRepeatedString:
		if o != nil {
			return &OptionalRepeatedString{Value: slices.Clone(o.Value)}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalRepeatedString) Get() *[]string {
	if o == nil {
		return nil
	}
	v := slices.Clone(o.Value)
	return &v
}

// Int returns an OptionalInt for an int, *int or *OptionalInt.
func Int(v any) *OptionalInt {
	switch o := v.(type) {
	case int:
		return &OptionalInt{Value: int64(o)}
	case *int:
		if o != nil {
			return &OptionalInt{Value: int64(*o)}
		}
	case *OptionalInt:
		if o != nil {
			return &OptionalInt{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt) Get() *int {
	if o == nil {
		return nil
	}
	v := int(o.Value)
	return &v
}

// Int32 returns an OptionalInt32 for an int32, *int32 or *OptionalInt32.
func Int32(v any) *OptionalInt32 {
	switch o := v.(type) {
	case int32:
		return &OptionalInt32{Value: o}
	case *int32:
		if o != nil {
			return &OptionalInt32{Value: *o}
		}
	case *OptionalInt32:
		if o != nil {
			return &OptionalInt32{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt32) Get() *int32 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// UInt32 returns an OptionalUInt32 for a uint32, *uint32 or *OptionalUInt32.
func UInt32(v any) *OptionalUInt32 {
	switch o := v.(type) {
	case uint32:
		return &OptionalUInt32{Value: o}
	case *uint32:
		if o != nil {
			return &OptionalUInt32{Value: *o}
		}
	case *OptionalUInt32:
		if o != nil {
			return &OptionalUInt32{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalUInt32) Get() *uint32 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// Int64 returns an OptionalInt64 for an int, uint, int64 or uint64 (unsigned
// values are converted), a *int64 or *uint64, or an *OptionalInt64.
func Int64(v any) *OptionalInt64 {
	switch o := v.(type) {
	case int:
		return &OptionalInt64{Value: int64(o)}
	case uint:
		return &OptionalInt64{Value: int64(o)}
	case int64:
		return &OptionalInt64{Value: o}
	case uint64:
		return &OptionalInt64{Value: int64(o)}
	case *int64:
		if o != nil {
			return &OptionalInt64{Value: *o}
		}
	case *uint64:
		if o != nil {
			return &OptionalInt64{Value: int64(*o)}
		}
	case *OptionalInt64:
		if o != nil {
			return &OptionalInt64{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt64) Get() *int64 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// UInt64 returns an OptionalUInt64 for an int, uint, int64 or uint64 (signed
// values are converted), a *int64 or *uint64, or an *OptionalUInt64.
func UInt64(v any) *OptionalUInt64 {
	switch o := v.(type) {
	case int:
		return &OptionalUInt64{Value: uint64(o)}
	case uint:
		return &OptionalUInt64{Value: uint64(o)}
	case int64:
		return &OptionalUInt64{Value: uint64(o)}
	case uint64:
		return &OptionalUInt64{Value: o}
	case *int64:
		if o != nil {
			return &OptionalUInt64{Value: uint64(*o)}
		}
	case *uint64:
		if o != nil {
			return &OptionalUInt64{Value: *o}
		}
	case *OptionalUInt64:
		if o != nil {
			return &OptionalUInt64{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalUInt64) Get() *uint64 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// Bool returns an OptionalBool for a bool, *bool or *OptionalBool.
func Bool(v any) *OptionalBool {
	switch o := v.(type) {
	case bool:
		return &OptionalBool{Value: o}
	case *bool:
		if o != nil {
			return &OptionalBool{Value: *o}
		}
	case *OptionalBool:
		if o != nil {
			return &OptionalBool{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalBool) Get() *bool {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// FileMode returns an OptionalFileMode for an os.FileMode, *os.FileMode,
// uint32 or *OptionalFileMode.
func FileMode(v any) *OptionalFileMode {
	switch o := v.(type) {
	case os.FileMode:
		return &OptionalFileMode{Value: uint32(o)}
	case *os.FileMode:
		if o != nil {
			return &OptionalFileMode{Value: uint32(*o)}
		}
	case uint32:
		return &OptionalFileMode{Value: o}
	case *OptionalFileMode:
		if o != nil {
			return &OptionalFileMode{Value: o.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalFileMode) Get() *os.FileMode {
	if o == nil {
		return nil
	}
	v := os.FileMode(o.Value)
	return &v
}
