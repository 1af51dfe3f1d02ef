package ocispec

import (
	"runtime"
	"strings"
	"testing"
)

const testMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 8:2 / /srv rw,relatime master:7 - ext4 /dev/sda2 rw
24 23 8:3 / /srv/private rw,relatime - ext4 /dev/sda3 rw
25 22 0:40 / /mnt/with\040space rw - tmpfs tmpfs rw
26 22 0:41 / /srvx rw - tmpfs tmpfs rw
`

func TestHostPropagation(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"/", "rshared"},
		{"/var/lib", "rshared"},
		{"/srv", "rslave"},
		{"/srv/data/", "rslave"},
		{"/srv/private/x", ""},
		{"/srvx/y", ""},
		{"/mnt/with space/z", ""},
		{"/mnt/other", "rshared"},
	} {
		got, err := hostPropagation(strings.NewReader(testMountinfo), tc.path)
		if err != nil || got != tc.want {
			t.Errorf("hostPropagation(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	if _, err := hostPropagation(strings.NewReader(""), "/x"); err == nil {
		t.Error("empty mount table: no error")
	}
}

func TestCheckPropagation(t *testing.T) {
	for _, tc := range []struct {
		source, prop string
		ok           bool
	}{
		{"/var", "rshared", true},
		{"/var", "rslave", true},
		{"/srv/x", "rslave", true},
		{"/srv/x", "rshared", false},
		{"/srv/private", "rslave", false},
	} {
		err := checkPropagationIn(strings.NewReader(testMountinfo), tc.source, tc.prop)
		if (err == nil) != tc.ok {
			t.Errorf("checkPropagationIn(%q, %q) = %v, want ok=%v", tc.source, tc.prop, err, tc.ok)
		}
	}
}

func TestCheckHostPropagationReadsHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc/self/mountinfo")
	}
	// The host's root mount exists; whatever its propagation, the check
	// must either pass or explain the mismatch, not fail to read.
	err := CheckHostPropagation("/", "rslave")
	if err != nil && !strings.Contains(err.Error(), "needs rslave propagation") {
		t.Errorf("CheckHostPropagation(/): %v", err)
	}
}
