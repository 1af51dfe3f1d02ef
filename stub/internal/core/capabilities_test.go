package core

import (
	"context"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// toldRecorder records what its Configure handler's context carries.
type toldRecorder struct {
	caps capability.Set
	told bool
}

func (r *toldRecorder) Configure(ctx context.Context, _, _, _ string) (api.EventMask, error) {
	r.caps, r.told = ToldCapabilities(ctx)
	return 0, nil
}

func (r *toldRecorder) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

func TestToldCapabilities(t *testing.T) {
	told := capability.NewSet(capability.Env, capability.Mounts, capability.UpdatePids)
	required := capability.NewSet(capability.Env, capability.Evict)
	for _, tc := range []struct {
		name     string
		set      *api.CapabilitySet
		want     capability.Set
		wantTold bool
	}{
		{"absent", nil, capability.Set{}, false},
		{"empty", &api.CapabilitySet{}, capability.Set{}, true},
		{"names", &api.CapabilitySet{Names: told.Names()}, told, true},
		{"with a newer runtime's", &api.CapabilitySet{Names: append(told.Names(), "linux.future")}, told, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &toldRecorder{}
			p, err := New(h, Config{RequiredCapabilities: required})
			if err != nil {
				t.Fatal(err)
			}
			rsp, err := p.NewSession().Configure(context.Background(), &api.ConfigureRequest{
				NRIVersion: api.NRIVersion, SupportedEvents: int32(api.AllEvents), Capabilities: tc.set,
			})
			if err != nil {
				t.Fatal(err)
			}
			if h.caps != tc.want || h.told != tc.wantTold {
				t.Errorf("handler's context: %v (%v), want %v (%v)", h.caps, h.told, tc.want, tc.wantTold)
			}
			if info := p.Runtime(); info.Capabilities != tc.want || info.CapabilitiesTold != tc.wantTold {
				t.Errorf("Runtime(): %v (%v), want %v (%v)", info.Capabilities, info.CapabilitiesTold, tc.want, tc.wantTold)
			}
			got, unknown := capability.ParseSet(rsp.GetRequiredCapabilities())
			if got != required || len(unknown) != 0 {
				t.Errorf("required sent: %q", rsp.GetRequiredCapabilities())
			}
		})
	}
	if _, ok := ToldCapabilities(context.Background()); ok {
		t.Error("capabilities told outside a Configure handler")
	}
}
