package differ

import (
	"strings"
	"testing"
)

// TestParseConfigNamesField: a bad configuration is refused with a message
// naming the plugin, the line and the field.
func TestParseConfigNamesField(t *testing.T) {
	_, err := ParseConfig("# comment\nfoo: 1\n")
	if err == nil || !strings.Contains(err.Error(), "invalid differ configuration: line 2: ") || !strings.Contains(err.Error(), `unknown key "foo" at the top level`) {
		t.Errorf("error %v, want the line and %q", err, `unknown key "foo" at the top level`)
	}
	if _, err := ParseConfig("# only a comment\n"); err != nil {
		t.Errorf("a configuration of comments: %v", err)
	}
}
