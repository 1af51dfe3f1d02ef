package ocispec

import (
	"maps"
	"slices"

	"github.com/nrikit/nrikit/api"
)

// mapEdit is a validated adjustment of a keyed map: keys to delete, then
// entries to set.
type mapEdit[V any] struct {
	del []string
	set map[string]V
}

// splitMarked separates the removal-marked keys of in from the rest and
// rejects empty keys. field names the map in errors.
func splitMarked[V any](field string, in map[string]V) (mapEdit[V], error) {
	e := mapEdit[V]{set: map[string]V{}}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		key, marked := api.IsMarkedForRemoval(k)
		if key == "" {
			return e, invalidf(field, "empty key %q", k)
		}
		if marked {
			e.del = append(e.del, key)
		} else {
			e.set[key] = in[k]
		}
	}
	return e, nil
}

// apply makes the edit to m and returns the (possibly new) map.
func (e mapEdit[V]) apply(m map[string]V) map[string]V {
	for _, k := range e.del {
		delete(m, k)
	}
	if len(e.set) == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]V, len(e.set))
	}
	maps.Copy(m, e.set)
	return m
}

// filtered runs filter, if set, on a copy of in.
func filtered(field string, filter func(map[string]string) (map[string]string, error), in map[string]string) (map[string]string, error) {
	if filter == nil {
		return in, nil
	}
	out, err := filter(maps.Clone(in))
	if err != nil {
		return nil, fieldErr(field, err)
	}
	return out, nil
}
