package api

import (
	"strings"
	"testing"
)

func TestCheckPluginIndex(t *testing.T) {
	for _, ok := range []string{"00", "10", "99"} {
		if err := CheckPluginIndex(ok); err != nil {
			t.Errorf("CheckPluginIndex(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1", "100", "a1", "1a", "-1", "٣٣"} {
		if err := CheckPluginIndex(bad); err == nil {
			t.Errorf("CheckPluginIndex(%q) accepted", bad)
		}
	}
}

func TestCheckPluginName(t *testing.T) {
	for _, ok := range []string{"logger", "device-injector", "a.b_c+d", "X9"} {
		if err := CheckPluginName(ok); err != nil {
			t.Errorf("CheckPluginName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "has space", "slash/x", "ü"} {
		if err := CheckPluginName(bad); err == nil {
			t.Errorf("CheckPluginName(%q) accepted", bad)
		}
	}
}

func TestParsePluginName(t *testing.T) {
	tests := []struct {
		in, idx, name, err string
	}{
		{"10-logger", "10", "logger", ""},
		{"05-device-injector", "05", "device-injector", ""},
		{"logger", "", "", "want IDX-NAME"},
		{"1-logger", "", "", "two digits"},
		{"10-", "", "", "empty"},
		{"10-bad name", "", "", "not allowed"},
	}
	for _, tt := range tests {
		idx, name, err := ParsePluginName(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParsePluginName(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || idx != tt.idx || name != tt.name {
			t.Errorf("ParsePluginName(%q) = %q, %q, %v", tt.in, idx, name, err)
		}
		if FullPluginName(idx, name) != tt.in {
			t.Errorf("FullPluginName round trip of %q", tt.in)
		}
	}
}
