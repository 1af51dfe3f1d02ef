package nrikitstub

import (
	"context"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
	"github.com/nrikit/nrikit/interop/internal/upstreamrt"
)

// TestValidatorRejects runs a nrikit-stub validator that rejects every
// container under upstream's runtime: CreateContainer fails with its
// reason.
func TestValidatorRejects(t *testing.T) {
	t.Parallel()
	const full = "40-reject"
	r := newRuntime(t, runtimeName, runtimeVersion)
	r.Install(pluginBin, full, "-mode", string(behavior.Reject))
	r.start()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := upstreamrt.Events{Adaptation: r.Adaptation}.CreateContainer(ctx, &api.CreateContainerRequest{Pod: fixture.Pod(), Container: fixture.Container(api.ContainerState_CONTAINER_UNKNOWN)})
	if err == nil {
		t.Fatal("CreateContainer succeeded despite the validator's rejection")
	}
	if !strings.Contains(err.Error(), behavior.RejectReason) {
		t.Errorf("CreateContainer error %q lacks the reason %q", err, behavior.RejectReason)
	}
	if v, ok := lifecycle.One(t, r.recordsOf(full), "ValidateContainerAdjustment"); ok && !strings.Contains(v.Err, behavior.RejectReason) {
		t.Errorf("validator recorded error %q", v.Err)
	}
}
