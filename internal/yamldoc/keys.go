package yamldoc

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// unknownKey describes yaml.v3's message about an unknown key (which
// names the Go type) in the document's terms: where the key is, by its
// path in the document ("grants[0].adjust"), and, given the type decoded
// into (v), the known key it was probably meant to be: unknown key "evn"
// in grants[0].adjust (did you mean "env"?).
func unknownKey(key string, line int, root *yaml.Node, v any) string {
	path, found := keyPath(root, key, line)
	msg := fmt.Sprintf("unknown key %q", key)
	switch {
	case !found:
	case len(path) == 0:
		msg += " at the top level"
	default:
		msg += " in " + PathString(path)
	}
	if found && v != nil {
		if near := closest(key, knownKeys(reflect.TypeOf(v), path)); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
	}
	return msg
}

// keyPath returns the path (mapping keys and sequence indexes) of the
// mapping in which key appears at line.
func keyPath(root *yaml.Node, key string, line int) ([]any, bool) {
	if root == nil {
		return nil, false
	}
	var walk func(n *yaml.Node, path []any) ([]any, bool)
	walk = func(n *yaml.Node, path []any) ([]any, bool) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Line == line && k.Value == key {
					return path, true
				}
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if p, ok := walk(n.Content[i+1], append(path[:len(path):len(path)], n.Content[i].Value)); ok {
					return p, true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if p, ok := walk(c, append(path[:len(path):len(path)], i)); ok {
					return p, true
				}
			}
		}
		return nil, false
	}
	return walk(root, nil)
}

// PathString renders a path in a document, its mapping keys (strings)
// and sequence indexes (ints): grants[0].adjust.
func PathString(path []any) string {
	var b strings.Builder
	for _, step := range path {
		switch s := step.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return b.String()
}

// knownKeys returns the keys the struct at path below type t decodes
// (nil if path does not lead to a struct).
func knownKeys(t reflect.Type, path []any) []string {
	for _, step := range path {
		t = deref(t)
		switch s := step.(type) {
		case string:
			switch t.Kind() {
			case reflect.Struct:
				f, ok := fieldByKey(t, s)
				if !ok {
					return nil
				}
				t = f
			case reflect.Map:
				t = t.Elem()
			default:
				return nil
			}
		case int:
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			t = t.Elem()
		}
	}
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	structKeys(t, func(key string, _ reflect.Type) bool { keys = append(keys, key); return true })
	return keys
}

// fieldByKey returns the type of the field of struct t that decodes key.
func fieldByKey(t reflect.Type, key string) (reflect.Type, bool) {
	var found reflect.Type
	structKeys(t, func(k string, ft reflect.Type) bool {
		if k == key {
			found = ft
			return false
		}
		return true
	})
	return found, found != nil
}

// structKeys calls f with each key struct t decodes, as yaml.v3 names
// them (the yaml tag's name, else the field's name in lower case; inline
// fields' keys), and its field's type, until f returns false.
func structKeys(t reflect.Type, f func(key string, ft reflect.Type) bool) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") {
			if ft := deref(sf.Type); ft.Kind() == reflect.Struct && !structKeys(ft, f) {
				return false
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		if !f(name, sf.Type) {
			return false
		}
	}
	return true
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// closest returns the key of keys nearest to key if it is near enough to
// be a misspelling of it (a few letters wrong, swapped or in the wrong
// case), else "".
func closest(key string, keys []string) string {
	best, bestDist := "", 0
	for _, k := range keys {
		d := distance(strings.ToLower(key), strings.ToLower(k))
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" || bestDist > max(1, min(len(key), len(best))/3) {
		return ""
	}
	return best
}

// maxCompared bounds the keys distance compares: a key from a document is
// input, and the cost is quadratic in its length.
const maxCompared = 64

// distance is the edit distance between a and b counting an insertion, a
// deletion, a substitution or a swap of two neighbours as one (the
// optimal string alignment distance), over bytes.
func distance(a, b string) int {
	if len(a) > maxCompared || len(b) > maxCompared {
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
