package ocispec

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

func TestDiff(t *testing.T) {
	before := richSpec()
	after := cloneSpec(t, before)
	err := Apply(after, &api.ContainerAdjustment{
		Env:         []*api.KeyValue{{Key: "PATH", Value: "/usr/bin"}, {Key: "-EMPTY"}, {Key: "NEW", Value: "x"}},
		Annotations: map[string]string{"-io.example/a": "", "b": ""},
		Mounts:      []*api.Mount{{Destination: "/data", Type: "bind", Source: "/srv/other"}},
		Linux: &api.LinuxContainerAdjustment{
			Resources: &api.LinuxResources{
				Memory:         &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2 << 30}, Swap: &api.OptionalInt64{Value: 2 << 30}},
				HugepageLimits: []*api.HugepageLimit{{PageSize: "1GB", Limit: 1 << 30}},
			},
			OomScoreAdj: &api.OptionalInt{Value: 0},
			Namespaces:  []*api.LinuxNamespace{{Type: "-network"}},
		},
		Hooks: &api.Hooks{Poststop: []*api.Hook{{Path: "/hooks/extra"}}},
	})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []Change{
		{Path: "process.env[EMPTY]", Kind: Removed, Old: ""},
		{Path: "process.env[NEW]", Kind: Added, New: "x"},
		{Path: "process.env[PATH]", Kind: Modified, Old: "/bin", New: "/usr/bin"},
		{Path: "process.oomScoreAdj", Kind: Modified, Old: "-500", New: "0"},
		{Path: "mounts[/data]", Kind: Modified,
			Old: `{"destination":"/data","type":"bind","source":"/srv/data","options":["rbind","ro"]}`,
			New: `{"destination":"/data","type":"bind","source":"/srv/other"}`},
		{Path: "hooks.poststop[1]", Kind: Added, New: `{"path":"/hooks/extra"}`},
		{Path: "annotations[b]", Kind: Added, New: ""},
		{Path: "annotations[io.example/a]", Kind: Removed, Old: "1"},
		{Path: "linux.resources.memory.limit", Kind: Modified, Old: "1073741824", New: "2147483648"},
		{Path: "linux.resources.hugepageLimits[1GB]", Kind: Added, New: `{"pageSize":"1GB","limit":1073741824}`},
		{Path: "linux.namespaces[network]", Kind: Removed, Old: `{"type":"network","path":"/run/netns/n1"}`},
	}
	got := Diff(before, after)
	if !slices.Equal(got, want) {
		t.Errorf("Diff:\n%s\nwant:\n%s", changesText(got), changesText(want))
	}
	// Deterministic: the same inputs give the same output.
	for range 5 {
		if again := Diff(before, after); !slices.Equal(again, got) {
			t.Fatalf("Diff is not deterministic:\n%s\nvs\n%s", changesText(again), changesText(got))
		}
	}
	if d := Diff(before, cloneSpec(t, before)); len(d) != 0 {
		t.Errorf("Diff of equal specs = %s", changesText(d))
	}
}

func TestDiffOrderAndNil(t *testing.T) {
	mk := func(dests ...string) *rspec.Spec {
		s := &rspec.Spec{}
		for _, d := range dests {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: d})
		}
		return s
	}
	got := Diff(mk("/b", "/a"), mk("/a", "/b"))
	want := []Change{{Path: "mounts.order", Kind: Modified, Old: `["/b","/a"]`, New: `["/a","/b"]`}}
	if !slices.Equal(got, want) {
		t.Errorf("reordered mounts: %s, want %s", changesText(got), changesText(want))
	}
	if got := Diff(mk("/a"), mk("/a", "/b")); len(got) != 1 || got[0].Path != "mounts[/b]" {
		t.Errorf("appended mount: %s, want only mounts[/b] added", changesText(got))
	}

	got = Diff(nil, &rspec.Spec{Version: "1.3.0", Process: &rspec.Process{Args: []string{"sh", "-c"}}})
	want = []Change{
		{Path: "ociVersion", Kind: Added, New: "1.3.0"},
		{Path: "process.args", Kind: Added, New: `["sh","-c"]`},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff(nil, spec) = %s, want %s", changesText(got), changesText(want))
	}
	if got := Diff(nil, nil); len(got) != 0 {
		t.Errorf("Diff(nil, nil) = %s", changesText(got))
	}
}

func TestFields(t *testing.T) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("FOO", "bar")
	adj.RemoveEnv("OLD")
	adj.AddMount(&api.Mount{Destination: "/data", Source: "/srv", Type: "bind", Options: []string{"rbind", "ro"}})
	adj.AddDevice(&api.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 3, FileMode: &api.OptionalFileMode{Value: 0o666}})
	adj.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/gpu=0"})
	adj.AddRlimit("RLIMIT_NOFILE", 10, 5)
	adj.AddAnnotation("a", "b")
	adj.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}}})
	adj.SetLinuxMemoryLimit(1024)
	adj.SetLinuxCPUSetCPUs("0-1")
	adj.SetArgs([]string{"sh", "-c"})
	want := map[string]string{
		"env[FOO]":                      "bar",
		"env[-OLD]":                     "",
		"mounts[/data]":                 "type=bind source=/srv options=[rbind ro]",
		"linux.devices[/dev/x]":         "type=c major=1 minor=3 file_mode=0666",
		"CDI_devices[vendor.com/gpu=0]": present,
		"rlimits[RLIMIT_NOFILE]":        "hard=10 soft=5",
		"annotations[a]":                "b",
		"hooks.prestart[0]":             "path=/bin/hook args=[hook x]",
		"linux.resources.memory.limit":  "1024",
		"linux.resources.cpu.cpus":      "0-1",
		"args[0]":                       "sh",
		"args[1]":                       "-c",
	}
	got := Fields(adj)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s = %q", k, got[k])
		}
	}
	if len(Fields(nil)) != 0 || len(Fields(&api.ContainerAdjustment{})) != 0 {
		t.Error("empty messages have fields")
	}
	// Enums by name, device cgroup rules (no key) by index.
	res := Fields(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true, Access: "rw"}}})
	if res["devices[0]"] != "allow=true access=rw" {
		t.Errorf("cgroup rule: %v", res)
	}
	prio := Fields(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE})
	if prio["class"] != "IOPRIO_CLASS_BE" {
		t.Errorf("enum: %v", prio)
	}
	// A set message with no set fields, and a key that occurs twice.
	twice := Fields(&api.ContainerAdjustment{
		Linux:  &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{}},
		Mounts: []*api.Mount{{Destination: "/d", Source: "/a"}, {Destination: "/d", Source: "/b"}},
	})
	want = map[string]string{"linux.resources": "{}", "mounts[/d]": "source=/a", "mounts[/d#2]": "source=/b"}
	if !maps.Equal(twice, want) {
		t.Errorf("Fields = %v, want %v", twice, want)
	}
}

func TestDiffFields(t *testing.T) {
	got := DiffFields(map[string]string{"a": "1", "b": "2", "c": ""}, map[string]string{"b": "3", "c": "", "d": ""})
	want := []Change{
		{Path: "a", Kind: Removed, Old: "1"},
		{Path: "b", Kind: Modified, Old: "2", New: "3"},
		{Path: "d", Kind: Added},
	}
	if !slices.Equal(got, want) {
		t.Errorf("DiffFields:\n%s\nwant:\n%s", changesText(got), changesText(want))
	}
}

func TestChangeJSON(t *testing.T) {
	c := Change{Path: "process.env[A]", Kind: Added, New: "1"}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"path":"process.env[A]","kind":"added","old":"","new":"1"}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	var back Change
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"kind":"renamed"}`), &back); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestChangeString(t *testing.T) {
	for _, tc := range []struct {
		c    Change
		want string
	}{
		{Change{Path: "a", Kind: Added, New: "1"}, "+ a: 1"},
		{Change{Path: "a", Kind: Removed, Old: "1"}, "- a: 1"},
		{Change{Path: "a", Kind: Modified, Old: "1", New: "2"}, "~ a: 1 -> 2"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.c, got, tc.want)
		}
	}
	if Added.String() != "added" || Removed.String() != "removed" || Modified.String() != "modified" || ChangeKind(9).String() != "ChangeKind(9)" {
		t.Error("ChangeKind.String")
	}
}

// changesText formats changes one per line.
func changesText(cs []Change) string {
	s := ""
	for _, c := range cs {
		s += "  " + c.String() + "\n"
	}
	return s
}
