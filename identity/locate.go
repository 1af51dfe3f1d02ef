package identity

import (
	"maps"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// Locate returns the container, of the runtime's pods and containers,
// that the process runs in, or nil if it runs in none of them: the one
// whose cgroup (CgroupDir of its linux.cgroupsPath) is the process's
// cgroup or an ancestor of it, the deepest if several are. A container
// with a relative cgroups path is placed by its init process (its pid):
// the cgroup /proc/PID/cgroup gives for it (read with read, through the
// runtime's /proc) must end with the relative path, and that cgroup is
// the container's. The runtime's list is its own record, which no plugin
// writes; a process can be in a container's cgroup only if the runtime
// put it there or something with write access to the cgroup file system
// (root on the node) moved it.
//
// read returns the text of /proc/PID/cgroup of a process (nil: containers
// with a relative cgroups path are not placed).
func Locate(proc *Process, pods []*api.PodSandbox, ctrs []*api.Container, read func(pid int) (string, error)) *Container {
	if proc == nil || proc.Cgroup == "" {
		return nil
	}
	var (
		best    *api.Container
		bestDir string
	)
	for _, c := range ctrs {
		dir, relative, err := CgroupDir(c.GetLinux().GetCgroupsPath())
		if err != nil {
			continue
		}
		if relative {
			if read == nil || c.GetPid() == 0 || !strings.Contains(proc.Cgroup, "/"+dir) {
				continue
			}
			if dir = placeRelative(c, dir, read); dir == "" {
				continue
			}
		}
		if within(proc.Cgroup, dir) && len(dir) > len(bestDir) {
			best, bestDir = c, dir
		}
	}
	if best == nil {
		return nil
	}
	out := &Container{ID: best.GetId(), Name: best.GetName(), Image: best.GetImage().GetName()}
	for _, p := range pods {
		if p.GetId() == best.GetPodSandboxId() {
			out.Pod = Pod{ID: p.GetId(), UID: p.GetUid(), Namespace: p.GetNamespace(), Name: p.GetName(), Labels: maps.Clone(p.GetLabels())}
			break
		}
	}
	if out.Pod.ID == "" {
		out.Pod.ID = best.GetPodSandboxId()
	}
	return out
}

// placeRelative returns the cgroup of the container c whose cgroups path
// is the relative rel, from its init process's cgroup, or "" if that
// cgroup does not end with rel (the process is no longer the container's:
// its PID was reused).
func placeRelative(c *api.Container, rel string, read func(pid int) (string, error)) string {
	text, err := read(int(c.GetPid()))
	if err != nil {
		return ""
	}
	q, err := ProcCgroup(text)
	if err != nil {
		return ""
	}
	dir, ok := relativeBase(q, rel)
	if !ok {
		return ""
	}
	return dir
}
