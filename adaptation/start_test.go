package adaptation

import (
	"context"
	"testing"
	"time"
)

// TestExternalDuringStart checks that Start listens while pre-installed
// plugins start: an external plugin registers and is synchronized while a
// pre-installed one still holds Start up in Synchronize.
func TestExternalDuringStart(t *testing.T) {
	const syncDelay = 4 * time.Second
	rt := newTestRuntime(t, []testPlugin{{full: "10-slow", args: helperArgs("stub", "-sync-delay", syncDelay.String())}})
	started := make(chan error, 1)
	begin := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		started <- rt.a.Start(ctx)
	}()
	rt.logs.wait(t, "slow plugin synchronizing", func(r logRecord) bool {
		return r.msg == "plugin configured" && r.attrs["plugin"] == "10-slow"
	})
	startExternal(t, rt.logs, "quick", helperArgs("stub", "-socket", rt.socket, "-name", "quick", "-idx", "20"))
	rt.logs.wait(t, "external plugin synchronized", func(r logRecord) bool {
		return r.msg == "plugin synchronized" && r.attrs["plugin"] == "20-quick"
	})
	select {
	case err := <-started:
		t.Fatalf("Start returned (%v) before the external plugin could register", err)
	default:
	}
	if took := time.Since(begin); took >= syncDelay {
		t.Errorf("the external plugin was synchronized %v after Start began, not within the slow plugin's %v", took, syncDelay)
	}
	if err := <-started; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if info, ok := rt.plugin("10-slow"); !ok || info.State != StateActive {
		t.Errorf("slow plugin after Start: %+v", rt.a.Plugins())
	}
}
