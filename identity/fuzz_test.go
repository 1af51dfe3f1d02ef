package identity

import (
	"path"
	"strings"
	"testing"
)

// FuzzCgroup checks that the parsers of cgroup texts and cgroups paths
// never panic, that a path they return is absolute and clean (or, for a
// relative cgroups path, clean and inside), and that Locate never places
// a process in a container whose cgroup does not hold its cgroup.
func FuzzCgroup(f *testing.F) {
	for _, s := range []string{"0::/a/b\n", "8:pids:/kubepods/pod1/abc\n4:memory:/x\n", "kubepods-besteffort-pod1.slice:cri-containerd:abc",
		"/crio/crio-def", "rel", ":crio:x", "-.slice:p:n", "a--b.slice:p:n", "1:name=systemd:/\n0::/\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ProcCgroup(s); err == nil && !path.IsAbs(p) {
			t.Fatalf("ProcCgroup(%q) = %q, not absolute", s, p)
		}
		dir, relative, err := CgroupDir(s)
		if err != nil {
			return
		}
		if path.Clean(dir) != dir || relative == path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
			t.Fatalf("CgroupDir(%q) = %q, %v", s, dir, relative)
		}
		if c := Locate(&Process{Cgroup: "/x/" + dir}, testPods, testCtrs, func(int) (string, error) { return s, nil }); c != nil {
			d, _, _ := CgroupDir(testCtrs[indexOf(c.ID)].GetLinux().GetCgroupsPath())
			if !strings.Contains("/x/"+dir, d) {
				t.Fatalf("Locate placed /x/%s in %s (%s)", dir, c.ID, d)
			}
		}
	})
}

// indexOf returns the index of the container id in testCtrs.
func indexOf(id string) int {
	for i, c := range testCtrs {
		if c.GetId() == id {
			return i
		}
	}
	return -1
}
