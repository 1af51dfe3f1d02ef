package stub_test

import (
	"context"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// configRecorder remembers the configuration it was given.
type configRecorder struct {
	mu     sync.Mutex
	config string
}

func (c *configRecorder) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.config = config
	return 0, nil
}

func (c *configRecorder) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

// TestDefaultConfig: WithDefaultConfig is the configuration when the
// runtime sends none; the runtime's own wins.
func TestDefaultConfig(t *testing.T) {
	for _, tc := range []struct {
		name, runtime, def, want string
	}{
		{"runtime sends none", "", "env: {A: b}\n", "env: {A: b}\n"},
		{"runtime sends blanks", " \n", "file", "file"},
		{"runtime's wins", "from-runtime", "file", "from-runtime"},
		{"neither", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := stubtest.NewRuntime(t, stubtest.WithConfig(tc.runtime))
			rec := &configRecorder{}
			startStub(t, rt, rec, stub.WithDefaultConfig(tc.def))
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.config != tc.want {
				t.Errorf("Configure got %q, want %q", rec.config, tc.want)
			}
		})
	}
}
