package gpuenv

import (
	"strings"
	"testing"
)

// TestParseConfigNamesField: a bad configuration is refused with a message
// naming the plugin, the line and the field.
func TestParseConfigNamesField(t *testing.T) {
	_, err := ParseConfig("# comment\nenv: [A, B]\n")
	if err == nil || !strings.Contains(err.Error(), "invalid gpu-env configuration: line 2: ") || !strings.Contains(err.Error(), "into env: want a mapping") {
		t.Errorf("error %v, want the line and %q", err, "into env: want a mapping")
	}
	if _, err := ParseConfig("# only a comment\n"); err != nil {
		t.Errorf("a configuration of comments: %v", err)
	}
}
