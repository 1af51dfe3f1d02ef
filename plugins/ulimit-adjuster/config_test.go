package ulimitadjuster

import (
	"strings"
	"testing"
)

// TestParseConfigNamesField: a bad configuration is refused with a message
// naming the plugin, the line and the field.
func TestParseConfigNamesField(t *testing.T) {
	_, err := ParseConfig("# comment\nfoo: 1\n")
	if err == nil || !strings.Contains(err.Error(), "invalid ulimit-adjuster configuration: line 2: ") || !strings.Contains(err.Error(), `unknown key "foo" at the top level`) {
		t.Errorf("error %v, want the line and %q", err, `unknown key "foo" at the top level`)
	}
	c, err := ParseConfig("# only a comment\n")
	if err != nil || len(c.Limits) != 0 {
		t.Errorf("a configuration of comments: %+v, %v", c, err)
	}
}

// TestParseConfigLimits: caps are read by canonical type, "unlimited" is
// RLIM_INFINITY, and bad types, values and duplicates are errors.
func TestParseConfigLimits(t *testing.T) {
	c, err := ParseConfig("namespaces: [ml]\nlimits:\n  nofile: 65536\n  RLIMIT_MEMLOCK: unlimited\n  rlimit_core: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Limits) != 3 || c.Limits["RLIMIT_NOFILE"] != 65536 || c.Limits["RLIMIT_MEMLOCK"] != Unlimited || c.Limits["RLIMIT_CORE"] != 0 {
		t.Errorf("limits %v", c.Limits)
	}
	if Unlimited.String() != "unlimited" || Cap(5).String() != "5" {
		t.Errorf("String: %s %s", Unlimited, Cap(5))
	}
	for config, want := range map[string]string{
		"limits: {files: 1}\n":                    `unknown resource limit type "files"`,
		"limits: {nofile: 1, RLIMIT_NOFILE: 2}\n": "RLIMIT_NOFILE is given twice",
		"limits:\n  nofile: -1\n":                 `line 2: cap "-1": want a non-negative integer or unlimited`,
		"limits:\n  nofile: lots\n":               `cap "lots"`,
		"limits:\n  nofile: [1]\n":                "want a non-negative integer",
		"namespaces: ['[']\n":                     "namespaces[0]",
	} {
		_, err := ParseConfig(config)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "invalid ulimit-adjuster configuration: ") {
			t.Errorf("%q: error %v, want %q", config, err, want)
		}
	}
}
