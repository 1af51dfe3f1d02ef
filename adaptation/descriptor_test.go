package adaptation

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
)

// TestMethodsCarryTheirWASMExport checks that every event's descriptor
// names the export of the WASM ABI serving its event, so that a WASM
// plugin's call does not look it up, and decodes the answer the event
// table gives the event.
func TestMethodsCarryTheirWASMExport(t *testing.T) {
	for _, d := range []struct {
		e api.Event
		m *method
	}{
		{rpcRunPodSandbox.event, rpcRunPodSandbox.method},
		{rpcUpdatePodSandbox.event, rpcUpdatePodSandbox.method},
		{rpcPostUpdatePodSandbox.event, rpcPostUpdatePodSandbox.method},
		{rpcStopPodSandbox.event, rpcStopPodSandbox.method},
		{rpcRemovePodSandbox.event, rpcRemovePodSandbox.method},
		{rpcCreateContainer.event, rpcCreateContainer.method},
		{rpcPostCreateContainer.event, rpcPostCreateContainer.method},
		{rpcStartContainer.event, rpcStartContainer.method},
		{rpcPostStartContainer.event, rpcPostStartContainer.method},
		{rpcUpdateContainer.event, rpcUpdateContainer.method},
		{rpcPostUpdateContainer.event, rpcPostUpdateContainer.method},
		{rpcStopContainer.event, rpcStopContainer.method},
		{rpcRemoveContainer.event, rpcRemoveContainer.method},
		{rpcValidate.event, rpcValidate.method},
	} {
		if want := wasmabi.EventFunc(d.e); d.m.wasm != want || want == "" {
			t.Errorf("%s: descriptor's export %q, want %q", d.e.Name(), d.m.wasm, want)
		}
		if got, want := string(d.m.answer.Descriptor().FullName()), d.e.Info().Response; got != want {
			t.Errorf("%s: descriptor's answer %s, the event table's %s", d.e.Name(), got, want)
		}
	}
	if methodStateChange.wasm != wasmabi.FuncStateChange {
		t.Errorf("StateChange: descriptor's export %q, want %q", methodStateChange.wasm, wasmabi.FuncStateChange)
	}
}
