package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Environ returns the environment of process pid from /proc/PID/environ.
func Environ(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

// Limits returns the line of /proc/PID/limits for the limit named name
// (e.g. "Max open files"), with runs of spaces collapsed.
func Limits(pid int, name string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") {
			return strings.Join(strings.Fields(line), " "), nil
		}
	}
	return "", fmt.Errorf("no %q in /proc/%d/limits", name, pid)
}

// DeviceNode describes a device file as the process pid sees it.
type DeviceNode struct {
	// Char is true for a character device, false for a block device.
	Char bool
	// Major and Minor are the device numbers.
	Major, Minor uint32
	// Mode is the permission bits.
	Mode os.FileMode
}

// String returns e.g. "c 1:3 0666".
func (d DeviceNode) String() string {
	t := "b"
	if d.Char {
		t = "c"
	}
	return fmt.Sprintf("%s %d:%d %04o", t, d.Major, d.Minor, uint32(d.Mode))
}

// Device stats path inside process pid's root (/proc/PID/root/PATH).
func Device(pid int, path string) (DeviceNode, error) {
	var st syscall.Stat_t
	p := filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path)
	if err := syscall.Stat(p, &st); err != nil {
		return DeviceNode{}, fmt.Errorf("stat %s: %w", p, err)
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFCHR, syscall.S_IFBLK:
	default:
		return DeviceNode{}, fmt.Errorf("%s is not a device node (mode %o)", p, st.Mode)
	}
	dev := uint64(st.Rdev)
	return DeviceNode{
		Char:  st.Mode&syscall.S_IFMT == syscall.S_IFCHR,
		Major: uint32((dev >> 8) & 0xfff),
		Minor: uint32((dev & 0xff) | ((dev >> 12) & 0xfff00)),
		Mode:  os.FileMode(st.Mode & 0o777),
	}, nil
}

// ReadFile reads path inside process pid's root.
func ReadFile(pid int, path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path))
}

// MountLine returns the line of /proc/PID/mountinfo whose mount point is
// target.
func MountLine(pid int, target string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && unescapeMount(f[4]) == target {
			return line, nil
		}
	}
	return "", fmt.Errorf("no mount at %s in /proc/%d/mountinfo", target, pid)
}

// CgroupFile reads file of the cgroup v1 controller (e.g. "memory") of
// process pid, from the hierarchy mounted at /sys/fs/cgroup/CONTROLLER.
func CgroupFile(pid int, controller, file string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, parts[2], file))
				return strings.TrimSpace(string(v)), err
			}
		}
	}
	return "", fmt.Errorf("process %d has no %s cgroup (cgroup v1 expected)", pid, controller)
}

// Alive reports whether process pid exists and has not exited (a
// zombie, exited but not yet reaped, is not alive).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// Children returns the processes whose parent is pid.
func Children(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if k, err := strconv.Atoi(e.Name()); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}
