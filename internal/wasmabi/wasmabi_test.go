//go:build !wasip1

package wasmabi

import (
	"reflect"
	"slices"
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
		if seen[fn] || !IsFunc(fn) {
			t.Errorf("Funcs() has %q twice or IsFunc rejects it", fn)
		}
		seen[fn] = true
	}
	for _, fn := range []string{ExportAPIVersion, ExportMalloc, ExportFree, "", "plugin_", "PLUGIN_CONFIGURE"} {
		if IsFunc(fn) {
			t.Errorf("IsFunc(%q) = true", fn)
		}
	}
	for _, e := range api.Events() {
		if fn := EventFunc(e); !seen[fn] {
			t.Errorf("EventFunc(%s) = %q, not a request function", e.Name(), fn)
		}
	}
	if got := EventFunc(api.Event_CREATE_CONTAINER); got != "plugin_create_container" {
		t.Errorf("EventFunc(CREATE_CONTAINER) = %q", got)
	}
	for _, e := range []api.Event{api.Event_UNKNOWN, api.Event_LAST, api.Event(99)} {
		if got := EventFunc(e); got != "" {
			t.Errorf("EventFunc(%d) = %q, want \"\"", e, got)
		}
	}
}

// TestMethodFunc checks that every method of the Plugin service has a
// request function, each a different one, and that nothing else has.
func TestMethodFunc(t *testing.T) {
	svc := reflect.TypeFor[api.PluginService]()
	var got []string
	for i := range svc.NumMethod() {
		name := svc.Method(i).Name
		fn := MethodFunc(name)
		if fn == "" {
			t.Errorf("method %s has no request function", name)
			continue
		}
		if e, err := api.ParseEvent(name); err == nil && EventFunc(e) != fn {
			t.Errorf("MethodFunc(%s) = %q, EventFunc = %q", name, fn, EventFunc(e))
		}
		got = append(got, fn)
	}
	want := Funcs()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("request functions of the service's methods %v, want the ABI's %v", got, want)
	}
	for _, bad := range []string{"", "RegisterPlugin", "createContainer", "Event_CREATE_CONTAINER", "CREATE_CONTAINER"} {
		if fn := MethodFunc(bad); fn != "" {
			t.Errorf("MethodFunc(%q) = %q, want none", bad, fn)
		}
	}
}

func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		ptr, size uint32
		isError   bool
		want      uint64
	}{
		{0x1000, 5, false, 0x1000<<32 | 5},
		{0x1000, 5, true, 0x1000<<32 | 5 | ErrorBit},
		{0x1000, 0, false, 0},       // an empty response
		{0x1000, 0, true, ErrorBit}, // an empty error
		{0xffffffff, MaxAnswerSize, false, 0xffffffff<<32 | MaxAnswerSize},
	} {
		got := Answer(tc.ptr, tc.size, tc.isError)
		if got != tc.want {
			t.Errorf("Answer(%#x, %d, %v) = %#x, want %#x", tc.ptr, tc.size, tc.isError, got, tc.want)
		}
		ptr, size, isError := ParseAnswer(got)
		wantPtr := tc.ptr
		if tc.size == 0 {
			wantPtr = 0
		}
		if ptr != wantPtr || size != tc.size || isError != tc.isError {
			t.Errorf("ParseAnswer(%#x) = %#x, %d, %v; want %#x, %d, %v", got, ptr, size, isError, wantPtr, tc.size, tc.isError)
		}
	}
	// upstream's guests (knqyf263/go-plugin) set bit 31 of the size for
	// an error string: the same encoding.
	if ptr, size, isError := ParseAnswer(0x20<<32 | 1<<31 | 3); ptr != 0x20 || size != 3 || !isError {
		t.Errorf("ParseAnswer of an upstream error answer = %#x, %d, %v", ptr, size, isError)
	}
}

// TestEventConstants checks the constants the guest's //go:wasmexport
// directives spell out against the event table.
func TestEventConstants(t *testing.T) {
	for e, fn := range map[api.Event]string{
		api.Event_RUN_POD_SANDBOX:               FuncRunPodSandbox,
		api.Event_STOP_POD_SANDBOX:              FuncStopPodSandbox,
		api.Event_REMOVE_POD_SANDBOX:            FuncRemovePodSandbox,
		api.Event_CREATE_CONTAINER:              FuncCreateContainer,
		api.Event_POST_CREATE_CONTAINER:         FuncPostCreateContainer,
		api.Event_START_CONTAINER:               FuncStartContainer,
		api.Event_POST_START_CONTAINER:          FuncPostStartContainer,
		api.Event_UPDATE_CONTAINER:              FuncUpdateContainer,
		api.Event_POST_UPDATE_CONTAINER:         FuncPostUpdateContainer,
		api.Event_STOP_CONTAINER:                FuncStopContainer,
		api.Event_REMOVE_CONTAINER:              FuncRemoveContainer,
		api.Event_UPDATE_POD_SANDBOX:            FuncUpdatePodSandbox,
		api.Event_POST_UPDATE_POD_SANDBOX:       FuncPostUpdatePodSandbox,
		api.Event_VALIDATE_CONTAINER_ADJUSTMENT: FuncValidateContainerAdjustment,
	} {
		if got := EventFunc(e); got != fn {
			t.Errorf("%s: the table's export %q, the constant %q", e.Name(), got, fn)
		}
	}
}
