package deviceinjector

import (
	"strings"
	"testing"
)

// TestParseConfigNamesField: a bad configuration is refused with a message
// naming the plugin, the line and the field.
func TestParseConfigNamesField(t *testing.T) {
	_, err := ParseConfig("# comment\nfoo: 1\n")
	if err == nil || !strings.Contains(err.Error(), "invalid device-injector configuration: line 2: ") || !strings.Contains(err.Error(), `unknown key "foo" at the top level`) {
		t.Errorf("error %v, want the line and %q", err, `unknown key "foo" at the top level`)
	}
	c, err := ParseConfig("# only a comment\n")
	if err != nil {
		t.Errorf("a configuration of comments: %v", err)
	}
	if len(c.Devices)+len(c.Mounts)+len(c.CDIDevices) != 0 {
		t.Errorf("an empty configuration allows %+v", c)
	}
}

// TestParseConfigRules: each rule is checked when the configuration is
// read, with the field named; unknown keys inside rules are errors too.
func TestParseConfigRules(t *testing.T) {
	good := "namespaces: [ml, 'team-*']\n" +
		"devices:\n  - {path: '/dev/nvidia[0-9]*', type: c, major: 195}\n  - {path: /dev/nvidiactl, type: c, major: 195, minor: 255}\n  - {path: /dev/fifo, type: p}\n" +
		"mounts:\n  - {source: /srv/models}\n  - {source: /scratch, readWrite: true}\n" +
		"cdiDevices: ['nvidia.com/gpu=*']\n"
	c, err := ParseConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Namespaces) != 2 || len(c.Devices) != 3 || *c.Devices[1].Minor != 255 || !c.Mounts[1].ReadWrite || c.CDIDevices[0] != "nvidia.com/gpu=*" {
		t.Errorf("decoded %+v", c)
	}
	for name, tc := range map[string]struct{ config, want string }{
		"unknown rule key":  {"devices:\n  - {path: /dev/x, type: c, major: 1, mjor: 2}\n", `unknown key "mjor"`},
		"no major":          {"devices:\n  - {path: /dev/sda, type: b}\n", "devices[0]: major: required for a b device"},
		"relative path":     {"devices:\n  - {path: 'dev/*', type: c, major: 1}\n", "not an absolute path pattern"},
		"bad path pattern":  {"devices:\n  - {path: '/dev/[', type: c, major: 1}\n", "devices[0]: path: pattern"},
		"bad type":          {"devices:\n  - {path: /dev/x, type: u, major: 1}\n", `type "u" is not one of c, b, p`},
		"fifo numbers":      {"devices:\n  - {path: /dev/x, type: p, major: 1}\n", "FIFO"},
		"negative":          {"devices:\n  - {path: /dev/x, type: c, major: -1}\n", "negative"},
		"relative source":   {"mounts:\n  - {source: srv}\n", `mounts[0]: source "srv" is not an absolute clean path`},
		"unclean source":    {"mounts:\n  - {source: /srv/../etc}\n", "not an absolute clean path"},
		"trailing slash":    {"mounts:\n  - {source: /srv/}\n", "not an absolute clean path"},
		"bad namespace":     {"namespaces: ['[']\n", "namespaces[0]: pattern"},
		"empty namespace":   {"namespaces: ['']\n", "namespaces[0]: empty pattern"},
		"bad CDI pattern":   {"cdiDevices: ['a/b=[']\n", "cdiDevices[0]: pattern"},
		"unknown mount key": {"mounts:\n  - {source: /srv, rw: true}\n", `unknown key "rw"`},
		"a second document": {"mounts: []\n---\nmounts: []\n", "more than one YAML document"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig(tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "invalid device-injector configuration: ") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func u32(v uint32) *uint32 { return &v }

// TestCheckDevice: a device is allowed only by a rule matching its path,
// its type and its numbers.
func TestCheckDevice(t *testing.T) {
	c, err := ParseConfig("devices:\n  - {path: '/dev/nvidia[0-9]*', type: c, major: 195}\n  - {path: /dev/nvidiactl, type: c, major: 195, minor: 255}\n  - {path: /dev/fifo, type: p}\n")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		dev  Device
		want string // "" allowed, else part of the reason
	}{
		"glob, any minor":        {Device{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0}, ""},
		"glob, two digits":       {Device{Path: "/dev/nvidia12", Type: "c", Major: 195, Minor: 12}, ""},
		"u is a char device":     {Device{Path: "/dev/nvidia1", Type: "u", Major: 195, Minor: 1}, ""},
		"exact minor":            {Device{Path: "/dev/nvidiactl", Type: "c", Major: 195, Minor: 255}, ""},
		"fifo":                   {Device{Path: "/dev/fifo", Type: "p"}, ""},
		"file mode":              {Device{Path: "/dev/nvidia0", Type: "c", Major: 195, FileMode: u32(0o666)}, ""},
		"other minor":            {Device{Path: "/dev/nvidiactl", Type: "c", Major: 195, Minor: 0}, "no rule"},
		"allowed name, /dev/mem": {Device{Path: "/dev/nvidia0", Type: "c", Major: 1, Minor: 1}, "no rule"},
		"block device":           {Device{Path: "/dev/nvidia0", Type: "b", Major: 195}, "no rule"},
		"the attack's disk":      {Device{Path: "/dev/sda", Type: "b", Major: 8, Minor: 0}, "no rule"},
		"glob does not cross /":  {Device{Path: "/dev/nvidia0/x", Type: "c", Major: 195}, "no rule"},
		"unclean path":           {Device{Path: "/dev/x/../nvidia0", Type: "c", Major: 195}, "clean"},
		"setuid mode":            {Device{Path: "/dev/nvidia0", Type: "c", Major: 195, FileMode: u32(0o4777)}, "file_mode"},
	} {
		t.Run(name, func(t *testing.T) {
			got := c.CheckDevice(tc.dev)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("CheckDevice(%s) = %q, want %q", tc.dev, got, tc.want)
			}
		})
	}
}

// TestCheckMount: bind mounts of sources under an allowed directory,
// compared on the cleaned path, read-only unless allowed read-write, with
// options from the allowed set.
func TestCheckMount(t *testing.T) {
	c, err := ParseConfig("mounts:\n  - {source: /srv/models}\n  - {source: /scratch, readWrite: true}\n")
	if err != nil {
		t.Fatal(err)
	}
	m := func(src string, opts ...string) Mount {
		return Mount{Source: src, Destination: "/data", Type: "bind", Options: opts}
	}
	for name, tc := range map[string]struct {
		m    Mount
		want string
	}{
		"the directory":         {m("/srv/models", "rbind", "ro"), ""},
		"under it":              {m("/srv/models/llama", "rbind", "ro", "nosuid", "nodev"), ""},
		"rro":                   {m("/srv/models", "rbind", "rro"), ""},
		"cleaned inside":        {m("/srv/models/./a//b", "ro"), ""},
		"read-write allowed":    {m("/scratch/job", "rbind", "rw"), ""},
		"read-only where rw ok": {m("/scratch", "ro"), ""},
		"rw refused":            {m("/srv/models", "rbind", "rw"), "read-only"},
		"rw by default refused": {m("/srv/models", "rbind"), "read-only"},
		"ro and rw":             {m("/scratch", "ro", "rw"), "both"},
		"sibling prefix":        {m("/srv/models2", "ro"), "not under"},
		"dot-dot escape":        {m("/srv/models/../../etc", "ro"), ".."},
		"parent":                {m("/srv", "ro"), "not under"},
		"host root":             {m("/", "rbind", "ro"), "not under"},
		"shared propagation":    {m("/scratch", "rbind", "rshared"), "propagate"},
		"unknown option":        {m("/srv/models", "ro", "exec-as-root"), `option "exec-as-root"`},
		"not a bind mount":      {Mount{Source: "tmpfs", Destination: "/x", Type: "tmpfs"}, `type "tmpfs"`},
		"relative source":       {m("srv/models", "ro"), "absolute"},
		"relative destination":  {Mount{Source: "/srv/models", Destination: "data", Type: "bind", Options: []string{"ro"}}, "destination"},
		"dot-dot destination":   {Mount{Source: "/srv/models", Destination: "/data/../etc", Type: "bind", Options: []string{"ro"}}, "destination"},
		"the attack":            {Mount{Source: "/", Destination: "/host", Type: "bind", Options: []string{"rbind", "rw"}}, "not under"},
	} {
		t.Run(name, func(t *testing.T) {
			got := c.CheckMount(tc.m)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("CheckMount(%s) = %q, want %q", tc.m, got, tc.want)
			}
		})
	}
	// "/" allows the host's root only when written as such.
	root, err := ParseConfig("mounts:\n  - {source: /}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := root.CheckMount(m("/", "rbind", "ro")); got != "" {
		t.Errorf("source / with a rule for /: %q", got)
	}
	if got := root.CheckMount(m("/etc", "rbind", "rw")); !strings.Contains(got, "read-only") {
		t.Errorf("read-write /etc with a read-only rule for /: %q", got)
	}
}

func TestCheckCDIDevice(t *testing.T) {
	c, err := ParseConfig("cdiDevices: ['nvidia.com/gpu=*', vendor.com/class=dev]\n")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"nvidia.com/gpu=0": true, "nvidia.com/gpu=all": true, "vendor.com/class=dev": true, "vendor.com/class=other": false, "nvidia.com/mig=0": false} {
		if got := c.CheckCDIDevice(name) == ""; got != want {
			t.Errorf("CheckCDIDevice(%q) allowed %v, want %v", name, got, want)
		}
	}
}
