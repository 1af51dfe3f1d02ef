package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api/capability"
)

// TestSpecKeysAreDocumentKeys checks that the key specKey derives for each
// capability from api's field table is a key of the policy document
// (GrantSpec's yaml tags): a field added to the proto without its grant in
// the document fails here.
func TestSpecKeysAreDocumentKeys(t *testing.T) {
	for _, c := range capability.AllCapabilities() {
		key := specKey(c)
		typ := reflect.TypeFor[GrantSpec]()
		for name := range strings.SplitSeq(key, ".") {
			for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
				typ = typ.Elem()
			}
			field, ok := fieldByYAML(typ, name)
			if !ok {
				t.Errorf("capability %s: policy key %q: no %q in %s", c, key, name, typ)
				break
			}
			typ = field.Type
		}
	}
}

func fieldByYAML(typ reflect.Type, name string) (reflect.StructField, bool) {
	if typ.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range typ.NumField() {
		if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); tag == name {
			return typ.Field(i), true
		}
	}
	return reflect.StructField{}, false
}
