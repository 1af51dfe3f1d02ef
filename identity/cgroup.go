package identity

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// v1Preference is the order in which ProcCgroup picks a cgroup v1
// hierarchy: the OCI runtime puts a container's processes in its cgroup
// in every hierarchy, and pids is in every Kubernetes-era kernel.
var v1Preference = []string{"pids", "memory", "cpu", "cpuacct", "name=systemd"}

// ProcCgroup returns the cgroup of a process from the text of its
// /proc/PID/cgroup: on a cgroup v2 host (one line, "0::PATH") that path;
// on a v1 or hybrid host the path of the first hierarchy of pids, memory,
// cpu, cpuacct and name=systemd the text has, else of the first v1
// hierarchy. Paths are as the reading process's cgroup namespace sees
// them, as are the cgroups of the containers the runtime made.
func ProcCgroup(text string) (string, error) {
	var (
		unified string
		v1      = map[string]string{}
		first   string
	)
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		controllers, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || id == "" || !path.IsAbs(p) {
			return "", fmt.Errorf("malformed cgroup line %q", clip(line))
		}
		if id == "0" && controllers == "" {
			unified = p
			continue
		}
		if first == "" {
			first = p
		}
		for _, c := range strings.Split(controllers, ",") {
			v1[c] = p
		}
	}
	if len(v1) == 0 {
		if unified == "" {
			return "", errors.New("no cgroup")
		}
		return unified, nil
	}
	for _, c := range v1Preference {
		if p, ok := v1[c]; ok {
			return p, nil
		}
	}
	return first, nil
}

// CgroupDir returns the cgroup the OCI runtime (runc, crun) makes for a
// container whose spec's linux.cgroupsPath is p, as ProcCgroup names
// cgroups: for the systemd form "SLICE:PREFIX:NAME", the slice expanded
// (kubepods-besteffort.slice: /kubepods.slice/kubepods-besteffort.slice;
// system.slice if empty) and the unit PREFIX-NAME.scope (NAME if it is a
// slice); for a cgroupfs path, the path. A relative cgroupfs path
// (containerd's for a pod without a cgroup parent) is relative to the
// OCI runtime's own cgroup, which the runtime does not know: relative is
// set and dir is the cleaned relative path.
func CgroupDir(p string) (dir string, relative bool, err error) {
	if p == "" {
		return "", false, errors.New("no cgroups path")
	}
	if !strings.HasPrefix(p, "/") && strings.Count(p, ":") == 2 {
		parts := strings.SplitN(p, ":", 3)
		slice, prefix, name := parts[0], parts[1], parts[2]
		if slice == "" {
			slice = "system.slice"
		}
		expanded, err := expandSlice(slice)
		if err != nil {
			return "", false, err
		}
		if name == "" || strings.Contains(name, "/") || strings.Contains(prefix, "/") {
			return "", false, fmt.Errorf("invalid systemd unit name in cgroups path %q", clip(p))
		}
		unit := name
		if !strings.HasSuffix(name, ".slice") {
			unit = prefix + "-" + name + ".scope"
		}
		return path.Join(expanded, unit), false, nil
	}
	clean := path.Clean(p)
	if clean == "." || strings.HasPrefix(clean, "../") || clean == ".." {
		return "", false, fmt.Errorf("invalid cgroups path %q", clip(p))
	}
	return clean, !path.IsAbs(clean), nil
}

// expandSlice expands a systemd slice name into its cgroup path, as
// systemd and runc do: a-b-c.slice is /a.slice/a-b.slice/a-b-c.slice,
// -.slice is /.
func expandSlice(slice string) (string, error) {
	const suffix = ".slice"
	name, ok := strings.CutSuffix(slice, suffix)
	if !ok || name == "" || strings.Contains(slice, "/") {
		return "", fmt.Errorf("invalid systemd slice %q", clip(slice))
	}
	if name == "-" {
		return "/", nil
	}
	var b strings.Builder
	prefix := ""
	for _, component := range strings.Split(name, "-") {
		if component == "" {
			return "", fmt.Errorf("invalid systemd slice %q", clip(slice))
		}
		b.WriteString("/" + prefix + component + suffix)
		prefix += component + "-"
	}
	return b.String(), nil
}

// within reports whether the cgroup p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// relativeBase returns the directory under which the relative cgroup rel
// would sit for the process cgroup p to be rel or below it: p is
// BASE/rel or BASE/rel/..., at a component boundary. It returns the last
// such BASE+"/"+rel, or false.
func relativeBase(p, rel string) (string, bool) {
	needle := "/" + rel
	for end := len(p); end > 0; {
		i := strings.LastIndex(p[:end], needle)
		if i < 0 {
			return "", false
		}
		j := i + len(needle)
		if j == len(p) || p[j] == '/' {
			return p[:j], true
		}
		end = i + len(needle) - 1
	}
	return "", false
}
