package identity

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestProcCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"cgroup v2", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-abc.scope\n",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-abc.scope"},
		// A v1 host with the unified hierarchy unused, the memory
		// controller elsewhere (as this repository's CI machine has it):
		// pids decides.
		{"cgroup v1", "9:name=systemd:/\n8:pids:/kubepods/besteffort/pod1/abc\n4:memory:/process_api/6d6b\n1:cpu:/\n0::/\n",
			"/kubepods/besteffort/pod1/abc"},
		{"v1 without pids", "4:memory:/crio/crio-abc\n2:cpu,cpuacct:/crio/crio-abc\n0::/\n", "/crio/crio-abc"},
		{"v1 combined controllers", "3:cpu,cpuacct:/a/b\n", "/a/b"},
		{"v1 other hierarchy", "5:devices:/x\n", "/x"},
		{"hybrid", "10:pids:/system.slice/crio-abc.scope\n1:name=systemd:/system.slice/crio-abc.scope\n0::/system.slice/crio-abc.scope\n",
			"/system.slice/crio-abc.scope"},
		{"path with a colon", "0::/a:b/c\n", "/a:b/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ProcCgroup(tc.text)
			if err != nil || got != tc.want {
				t.Errorf("ProcCgroup(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "garbage\n", "0::relative\n", "1:pids\n"} {
		if got, err := ProcCgroup(bad); err == nil {
			t.Errorf("ProcCgroup(%q) = %q, want an error", bad, got)
		}
	}
}

func TestCgroupDir(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		relative   bool
	}{
		// containerd v2.4.2 with the systemd driver (getCgroupsPath: the
		// parent's base slice, cri-containerd, the ID).
		{"kubepods-besteffort-pod1.slice:cri-containerd:abc",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-abc.scope", false},
		// CRI-O v1.36.3's systemd manager.
		{"kubepods-burstable-pod2.slice:crio:def",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2.slice/crio-def.scope", false},
		{":crio:def", "/system.slice/crio-def.scope", false},
		{"-.slice:p:n", "/p-n.scope", false},
		{"a.slice:p:b.slice", "/a.slice/b.slice", false},
		// cgroupfs: containerd under a kubelet's parent, CRI-O's default.
		{"/kubepods/besteffort/pod1/abc", "/kubepods/besteffort/pod1/abc", false},
		{"/crio/crio-def", "/crio/crio-def", false},
		{"//crio/./crio-def/", "/crio/crio-def", false},
		// containerd for a pod without a cgroup parent.
		{"abc", "abc", true},
		{"k8s.io/abc", "k8s.io/abc", true},
	} {
		dir, rel, err := CgroupDir(tc.path)
		if err != nil || dir != tc.want || rel != tc.relative {
			t.Errorf("CgroupDir(%q) = %q, %v, %v; want %q, %v", tc.path, dir, rel, err, tc.want, tc.relative)
		}
	}
	for _, bad := range []string{"", ".", "../x", "a-.slice:p:n", "a--b.slice:p:n", "notaslice:p:n", "a.slice:p:", "a/b.slice:p:n", "a.slice:p:x/y"} {
		if dir, _, err := CgroupDir(bad); err == nil {
			t.Errorf("CgroupDir(%q) = %q, want an error", bad, dir)
		}
	}
}

// The runtime's list as a kubelet's containerd with the systemd driver,
// CRI-O with cgroupfs, and containerd without a cgroup parent (relative)
// would give it.
var (
	testPods = []*api.PodSandbox{
		{Id: "pod-sys", Uid: "u1", Namespace: "kube-system", Name: "nri-plugin-logger-x7k2p", Labels: map[string]string{"app.kubernetes.io/name": "nri-plugin-logger"}},
		{Id: "pod-crio", Namespace: "default", Name: "crio-pod"},
		{Id: "pod-rel", Namespace: "e2e", Name: "rel-pod"},
	}
	testCtrs = []*api.Container{
		{Id: "abc", PodSandboxId: "pod-sys", Name: "plugin", Image: &api.Image{Name: "localhost/nrikit/logger:dev"},
			Linux: &api.LinuxContainer{CgroupsPath: "kubepods-besteffort-podu1.slice:cri-containerd:abc"}},
		{Id: "def", PodSandboxId: "pod-crio", Name: "app", Linux: &api.LinuxContainer{CgroupsPath: "/crio/crio-def"}},
		{Id: "nested", PodSandboxId: "pod-crio", Name: "inner", Linux: &api.LinuxContainer{CgroupsPath: "/crio/crio-def/nested"}},
		{Id: "rel", PodSandboxId: "pod-rel", Name: "r", Pid: 77, Linux: &api.LinuxContainer{CgroupsPath: "rel"}},
		{Id: "nolinux", PodSandboxId: "pod-crio", Name: "x"},
	}
)

func TestLocate(t *testing.T) {
	read := func(pid int) (string, error) {
		if pid == 77 {
			return "8:pids:/shim/rel\n", nil
		}
		return "", errors.New("no such process")
	}
	for _, tc := range []struct {
		cgroup, want string // want: container ID, "" for none
	}{
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice/cri-containerd-abc.scope", "abc"},
		// crun's systemd subgroup, a process in a sub-cgroup.
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice/cri-containerd-abc.scope/container", "abc"},
		{"/crio/crio-def", "def"},
		{"/crio/crio-def/nested", "nested"}, // the deepest
		{"/crio/crio-defx", ""},             // not a component prefix
		{"/shim/rel", "rel"},
		{"/shim/rel/sub", "rel"},
		// A cgroup named after the relative path elsewhere: the init
		// process is not there.
		{"/attacker/rel", ""},
		{"/user.slice/user-1000.slice/session-2.scope", ""},
	} {
		got := Locate(&Process{Cgroup: tc.cgroup}, testPods, testCtrs, read)
		id := ""
		if got != nil {
			id = got.ID
		}
		if id != tc.want {
			t.Errorf("Locate(%q) = %s, want %q", tc.cgroup, id, tc.want)
		}
	}
	c := Locate(&Process{Cgroup: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice/cri-containerd-abc.scope"}, testPods, testCtrs, read)
	want := Container{ID: "abc", Name: "plugin", Image: "localhost/nrikit/logger:dev", Pod: Pod{ID: "pod-sys", UID: "u1", Namespace: "kube-system",
		Name: "nri-plugin-logger-x7k2p", Labels: map[string]string{"app.kubernetes.io/name": "nri-plugin-logger"}}}
	if fmt.Sprint(*c) != fmt.Sprint(want) {
		t.Errorf("Locate: %+v, want %+v", *c, want)
	}
	// Without a reader, a relative cgroups path places nothing; nor does
	// an init process whose cgroup does not end with it (a PID reused).
	if c := Locate(&Process{Cgroup: "/shim/rel"}, testPods, testCtrs, nil); c != nil {
		t.Errorf("Locate without a reader: %+v", c)
	}
	reused := func(int) (string, error) { return "8:pids:/elsewhere\n", nil }
	if c := Locate(&Process{Cgroup: "/shim/rel"}, testPods, testCtrs, reused); c != nil {
		t.Errorf("Locate with the init process elsewhere: %+v", c)
	}
	if c := Locate(&Process{}, testPods, testCtrs, read); c != nil {
		t.Errorf("Locate without a cgroup: %+v", c)
	}
}

func TestRelativeBase(t *testing.T) {
	for _, tc := range []struct{ p, rel, want string }{
		{"/shim/rel", "rel", "/shim/rel"},
		{"/shim/rel/container", "rel", "/shim/rel"},
		{"/rel/x/rel", "rel", "/rel/x/rel"},
		{"/shim/relx", "rel", ""},
		{"/a/k8s.io/abc", "k8s.io/abc", "/a/k8s.io/abc"},
	} {
		got, ok := relativeBase(tc.p, tc.rel)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("relativeBase(%q, %q) = %q, %v; want %q", tc.p, tc.rel, got, ok, tc.want)
		}
	}
}
