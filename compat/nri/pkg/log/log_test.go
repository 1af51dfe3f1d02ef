package log_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	clog "github.com/containerd/log"

	nrilog "github.com/containerd/nri/pkg/log"
)

// recorder is a runtime's Logger, as moby's log shim is.
type recorder struct{ lines []string }

func (r *recorder) add(level, format string, args ...any) {
	r.lines = append(r.lines, level+" "+fmt.Sprintf(format, args...))
}
func (r *recorder) Debugf(_ context.Context, f string, a ...any) { r.add("debug", f, a...) }
func (r *recorder) Infof(_ context.Context, f string, a ...any)  { r.add("info", f, a...) }
func (r *recorder) Warnf(_ context.Context, f string, a ...any)  { r.add("warn", f, a...) }
func (r *recorder) Errorf(_ context.Context, f string, a ...any) { r.add("error", f, a...) }

// TestSetRoutesMessages: after Set, the package's functions and Get reach
// the runtime's logger at each level; Set(nil) restores the default, which
// writes to containerd/log.
func TestSetRoutesMessages(t *testing.T) {
	rec := &recorder{}
	nrilog.Set(rec)
	t.Cleanup(func() { nrilog.Set(nil) })
	ctx := context.Background()
	nrilog.Debugf(ctx, "d%d", 1)
	nrilog.Infof(ctx, "i%d", 2)
	nrilog.Warnf(ctx, "w%d", 3)
	nrilog.Errorf(ctx, "e%d", 4)
	nrilog.Get().Infof(ctx, "via Get")
	want := []string{"debug d1", "info i2", "warn w3", "error e4", "info via Get"}
	if strings.Join(rec.lines, "|") != strings.Join(want, "|") {
		t.Fatalf("recorded %q, want %q", rec.lines, want)
	}

	var buf bytes.Buffer
	out := clog.L.Logger.Out
	clog.L.Logger.SetOutput(&buf)
	t.Cleanup(func() { clog.L.Logger.SetOutput(out) })
	nrilog.Set(nil)
	nrilog.Warnf(ctx, "to containerd/log")
	if len(rec.lines) != len(want) {
		t.Errorf("the logger set before Set(nil) still got %q", rec.lines[len(want):])
	}
	if !strings.Contains(buf.String(), `level=warning msg="to containerd/log"`) {
		t.Errorf("the default logger did not write to containerd/log: %q", buf.String())
	}
}
