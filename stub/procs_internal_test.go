package stub

import (
	"context"
	"net"
	"runtime"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// creatorOnly is a plugin with one handler.
type creatorOnly struct{}

func (creatorOnly) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// TestProcessLeftAlone checks that a stub changes no process-wide setting
// unless asked to, however it connects.
func TestProcessLeftAlone(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	runtime.GOMAXPROCS(3)
	id := []Option{WithPluginIdx("10"), WithPluginName("test")}
	for name, opts := range map[string][]Option{
		"default":    nil,
		"own dialer": {WithDialer(func(string) (net.Conn, error) { return nil, net.ErrClosed })},
	} {
		st, err := New(creatorOnly{}, append(opts, id...)...)
		if err != nil {
			t.Fatal(err)
		}
		st.applyProcessSettings()
		if got := runtime.GOMAXPROCS(0); got != 3 {
			t.Errorf("%s: GOMAXPROCS = %d, want 3 (left alone)", name, got)
		}
		if got := st.c.syncGCPercent.Load(); got != 0 {
			t.Errorf("%s: GC percentage while synchronizing = %d, want none", name, got)
		}
	}
	st, err := New(creatorOnly{}, append(id, WithMaxProcs(2), WithSyncGCPercent(300))...)
	if err != nil {
		t.Fatal(err)
	}
	st.applyProcessSettings()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("WithMaxProcs(2): GOMAXPROCS = %d", got)
	}
	if got := st.c.syncGCPercent.Load(); got != 300 {
		t.Errorf("WithSyncGCPercent(300): %d", got)
	}
}

func TestTuneProcess(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	runtime.GOMAXPROCS(2)
	t.Setenv("GOMAXPROCS", "2")
	if TuneProcess(); runtime.GOMAXPROCS(0) != 2 {
		t.Errorf("TuneProcess overrode the GOMAXPROCS environment variable")
	}
	t.Setenv("GOMAXPROCS", "")
	if was := TuneProcess(); was != 2 || runtime.GOMAXPROCS(0) != DefaultMaxProcs {
		t.Errorf("TuneProcess: was %d, now %d; want 2 and %d", was, runtime.GOMAXPROCS(0), DefaultMaxProcs)
	}
}

func TestWithMaxProcsRejectsNegative(t *testing.T) {
	cfg := defaultConfig()
	if err := WithMaxProcs(-1)(&cfg); err == nil {
		t.Error("WithMaxProcs(-1) accepted")
	}
}
