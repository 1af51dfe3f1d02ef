package wasmhost

import (
	"reflect"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestMethodFunc checks that every method of the Plugin service has an
// export of the ABI, each a different one, and that nothing else has.
func TestMethodFunc(t *testing.T) {
	svc := reflect.TypeFor[api.PluginService]()
	var got []string
	for i := range svc.NumMethod() {
		name := svc.Method(i).Name
		fn := MethodFunc(name)
		if fn == "" {
			t.Errorf("method %s has no export", name)
			continue
		}
		got = append(got, fn)
	}
	want := Funcs()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("exports of the service's methods %v, want the ABI's %v", got, want)
	}
	for _, bad := range []string{"", "RegisterPlugin", "createContainer", "Event_CREATE_CONTAINER"} {
		if fn := MethodFunc(bad); fn != "" {
			t.Errorf("MethodFunc(%q) = %q, want none", bad, fn)
		}
	}
}
