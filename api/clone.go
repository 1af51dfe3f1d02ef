package api

import (
	"maps"
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
