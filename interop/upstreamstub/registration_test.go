package upstreamstub

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
)

// TestValidatorRejects runs an upstream-stub plugin implementing
// ValidateContainerAdjustment that rejects every container: nrikit's
// CreateContainer fails with its reason.
func TestValidatorRejects(t *testing.T) {
	t.Parallel()
	const full = "40-reject"
	r := newRuntime(t)
	r.Install(pluginBin, full, "-mode", string(behavior.Reject))
	r.start()
	if info := r.plugin(full); info.Events != api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT) {
		t.Errorf("validator subscribed to %s", info.Events)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := r.CreateContainer(ctx, &api.CreateContainerRequest{Pod: fixture.Pod(), Container: fixture.Container(api.ContainerState_CONTAINER_UNKNOWN)})
	if err == nil {
		t.Fatal("CreateContainer succeeded despite the validator's rejection")
	}
	if !strings.Contains(err.Error(), behavior.RejectReason) || !strings.Contains(err.Error(), full) {
		t.Errorf("CreateContainer error %q lacks the reason %q or the validator %s", err, behavior.RejectReason, full)
	}
	var verr *adaptation.ValidationError
	if !errors.As(err, &verr) || verr.Validator != full {
		t.Errorf("CreateContainer error is %T (%v), want a *adaptation.ValidationError of %s", err, err, full)
	}
	r.stop()
	if v, ok := lifecycle.One(t, r.recordsOf(full), "ValidateContainerAdjustment"); ok && !strings.Contains(v.Err, behavior.RejectReason) {
		t.Errorf("validator recorded error %q", v.Err)
	}
}

// TestUnsupportedEvent registers an upstream-stub plugin subscribing to
// UpdatePodSandbox with a runtime that does not deliver it: upstream's
// Start fails, and its error carries nrikit's reason, not a bare EOF.
func TestUnsupportedEvent(t *testing.T) {
	t.Parallel()
	const idx, name = "30", "unsupported"
	full := api.FullPluginName(idx, name)
	supported := api.AllEvents.Clear(api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX)
	r := newRuntime(t, adaptation.WithSupportedEvents(supported))
	r.start()
	p := r.external(idx, name, "-mode", string(behavior.Unsupported))
	if !p.Wait(hangGuard) {
		t.Fatal("plugin still runs after its registration should have failed")
	}
	if p.Err() == nil {
		t.Errorf("plugin exited successfully; output:\n%s", p.Output())
	}
	st, ok := lifecycle.One(t, r.recordsOf(full), "Start")
	if !ok {
		t.FailNow()
	}
	for _, want := range []string{"does not support", api.Event_UPDATE_POD_SANDBOX.Name()} {
		if !strings.Contains(st.Err, want) {
			t.Errorf("upstream's Start failed with %q, which lacks %q", st.Err, want)
		}
	}
	if strings.Contains(st.Err, api.Event_POST_UPDATE_POD_SANDBOX.Name()) {
		t.Errorf("Start error %q names PostUpdatePodSandbox, to which the plugin did not subscribe", st.Err)
	}
	for _, p := range r.Plugins() {
		if p.FullName() == full {
			t.Errorf("refused plugin is listed: %+v", p)
		}
	}
}
