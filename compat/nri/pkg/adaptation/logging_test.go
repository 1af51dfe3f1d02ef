package adaptation

import (
	"bytes"
	"strings"
	"testing"

	"github.com/containerd/log"
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
