package logger

import (
	"strings"
	"testing"
)

// TestParseConfigNamesField: a bad configuration is refused with a message
// naming the plugin, the line and the field.
func TestParseConfigNamesField(t *testing.T) {
	_, err := ParseConfig("# comment\nevents: [NoSuchEvent]\n")
	if err == nil || !strings.Contains(err.Error(), "invalid logger configuration: line 2: ") || !strings.Contains(err.Error(), "events:") {
		t.Errorf("error %v, want the line and %q", err, "events:")
	}
	if _, err := ParseConfig("# only a comment\n"); err != nil {
		t.Errorf("a configuration of comments: %v", err)
	}
}
