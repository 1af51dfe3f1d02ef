package api_test

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestRemovalMarkers(t *testing.T) {
	for _, tc := range []struct {
		key        string
		wantKey    string
		wantMarked bool
	}{
		{"FOO", "FOO", false},
		{"-FOO", "FOO", true},
		{"--FOO", "-FOO", true},
		{"-", "", true},
		{"", "", false},
		{"/mnt/x", "/mnt/x", false},
		{"-/mnt/x", "/mnt/x", true},
	} {
		key, marked := api.IsMarkedForRemoval(tc.key)
		if key != tc.wantKey || marked != tc.wantMarked {
			t.Errorf("IsMarkedForRemoval(%q) = %q, %v; want %q, %v", tc.key, key, marked, tc.wantKey, tc.wantMarked)
		}
		if got := api.ClearRemovalMarker(tc.key); got != tc.wantKey {
			t.Errorf("ClearRemovalMarker(%q) = %q, want %q", tc.key, got, tc.wantKey)
		}
	}
	for _, key := range []string{"FOO", "", "-x", "/dev/null"} {
		m := api.MarkForRemoval(key)
		if m != "-"+key {
			t.Errorf("MarkForRemoval(%q) = %q", key, m)
		}
		if got, marked := api.IsMarkedForRemoval(m); !marked || got != key {
			t.Errorf("IsMarkedForRemoval(MarkForRemoval(%q)) = %q, %v", key, got, marked)
		}
	}
}

func TestEntryRemovalMarkers(t *testing.T) {
	type marked interface{ IsMarkedForRemoval() (string, bool) }
	for _, tc := range []struct {
		name    string
		entry   marked
		wantKey string
		want    bool
	}{
		{"env", &api.KeyValue{Key: "-A"}, "A", true},
		{"env kept", &api.KeyValue{Key: "A", Value: "-1"}, "A", false},
		{"mount", &api.Mount{Destination: "-/m"}, "/m", true},
		{"mount kept", &api.Mount{Destination: "/m", Source: "-"}, "/m", false},
		{"device", &api.LinuxDevice{Path: "-/dev/x"}, "/dev/x", true},
		{"device kept", &api.LinuxDevice{Path: "/dev/x"}, "/dev/x", false},
		{"namespace", &api.LinuxNamespace{Type: "-network"}, "network", true},
		{"namespace kept", &api.LinuxNamespace{Type: "network", Path: "-"}, "network", false},
		{"nil env", (*api.KeyValue)(nil), "", false},
	} {
		key, m := tc.entry.IsMarkedForRemoval()
		if key != tc.wantKey || m != tc.want {
			t.Errorf("%s: IsMarkedForRemoval() = %q, %v; want %q, %v", tc.name, key, m, tc.wantKey, tc.want)
		}
	}
}
