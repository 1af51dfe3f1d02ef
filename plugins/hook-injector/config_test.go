package hookinjector

import (
	"strings"
	"testing"
)

// TestParseConfigNamesField: a bad configuration is refused with a message
// naming the plugin, the line and the field.
func TestParseConfigNamesField(t *testing.T) {
	_, err := ParseConfig("# comment\nhooksDirs: /etc\n")
	if err == nil || !strings.Contains(err.Error(), "invalid hook-injector configuration: line 2: ") || !strings.Contains(err.Error(), "into hooksDirs: want a list") {
		t.Errorf("error %v, want the line and %q", err, "into hooksDirs: want a list")
	}
	if _, err := ParseConfig("# only a comment\n"); err != nil {
		t.Errorf("a configuration of comments: %v", err)
	}
}
