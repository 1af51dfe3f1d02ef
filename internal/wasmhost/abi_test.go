package wasmhost

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestFuncs(t *testing.T) {
	fns := Funcs()
	if len(fns) != 3+len(api.Events())+1 {
		t.Fatalf("Funcs() has %d names, want %d", len(fns), 3+len(api.Events())+1)
	}
	seen := map[string]bool{}
	for _, fn := range fns {
		if seen[fn] || !isFunc(fn) {
			t.Errorf("Funcs() has %q twice or isFunc rejects it", fn)
		}
		seen[fn] = true
	}
	for _, fn := range []string{"plugin_api_version", "malloc", "", "plugin_"} {
		if isFunc(fn) {
			t.Errorf("isFunc(%q) = true", fn)
		}
	}
	if got := EventFunc(api.Event_CREATE_CONTAINER); got != "plugin_create_container" {
		t.Errorf("EventFunc(CREATE_CONTAINER) = %q", got)
	}
	if got := EventFunc(api.Event_LAST); got != "" {
		t.Errorf("EventFunc(LAST) = %q, want \"\"", got)
	}
}
