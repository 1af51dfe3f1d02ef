package adaptation

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/log"

	nrilog "github.com/containerd/nri/pkg/log"
)

// TestLoggerWritesToContainerdLog: the runtime library's records reach
// containerd/log with their level and attributes, and levels containerd's
// logger does not enable are dropped.
func TestLoggerWritesToContainerdLog(t *testing.T) {
	var buf bytes.Buffer
	out, lvl := log.L.Logger.Out, log.L.Logger.GetLevel()
	log.L.Logger.SetOutput(&buf)
	log.L.Logger.SetLevel(log.InfoLevel)
	t.Cleanup(func() { log.L.Logger.SetOutput(out); log.L.Logger.SetLevel(lvl) })

	l := logger().With("component", "nri")
	l.Info("plugin synchronized", "plugin", "10-test", "pods", 2)
	l.WithGroup("g").Warn("slow", "took", "3s")
	l.Debug("hidden")
	got := buf.String()
	for _, want := range []string{`level=info msg="plugin synchronized" component=nri plugin=10-test pods=2`, `level=warning msg=slow component=nri g.took=3s`} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hidden") {
		t.Errorf("a debug record was written at info level:\n%s", got)
	}
}

// customLogger records what reaches a runtime's pkg/log Logger.
type customLogger struct{ lines []string }

func (c *customLogger) Debugf(_ context.Context, f string, a ...any) {
	c.lines = append(c.lines, "debug "+fmt.Sprintf(f, a...))
}
func (c *customLogger) Infof(_ context.Context, f string, a ...any) {
	c.lines = append(c.lines, "info "+fmt.Sprintf(f, a...))
}
func (c *customLogger) Warnf(_ context.Context, f string, a ...any) {
	c.lines = append(c.lines, "warn "+fmt.Sprintf(f, a...))
}
func (c *customLogger) Errorf(_ context.Context, f string, a ...any) {
	c.lines = append(c.lines, "error "+fmt.Sprintf(f, a...))
}

// TestLoggerFollowsPkgLogSet: once a runtime sets its logger with pkg/log
// (moby's nrilog.Set), the runtime library's records go there, fields in
// the message, and no longer to containerd/log; debug records too, which
// the runtime's logger filters itself.
func TestLoggerFollowsPkgLogSet(t *testing.T) {
	var buf bytes.Buffer
	out := log.L.Logger.Out
	log.L.Logger.SetOutput(&buf)
	t.Cleanup(func() { log.L.Logger.SetOutput(out) })
	l := logger().With("component", "nri") // made before Set, as in a runtime

	c := &customLogger{}
	nrilog.Set(c)
	t.Cleanup(func() { nrilog.Set(nil) })
	l.Info("plugin synchronized", "plugin", "10-test", "reason", "two words")
	l.Debug("detail", "n", 1)
	l.Error("failed")
	want := []string{
		`info plugin synchronized component=nri plugin=10-test reason="two words"`,
		`debug detail component=nri n=1`,
		`error failed component=nri`,
	}
	if strings.Join(c.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("the runtime's logger got\n%s\nwant\n%s", strings.Join(c.lines, "\n"), strings.Join(want, "\n"))
	}
	if buf.Len() != 0 {
		t.Errorf("containerd/log still got records: %q", buf.String())
	}
}
