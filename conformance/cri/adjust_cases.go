package cri

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Values the adjustment checks set: each differs from what a runtime
// gives a container by default.
const (
	adjMemory     = 256 << 20
	adjCPUQuota   = 50000
	adjCPUPeriod  = 100000
	adjPids       = 128
	adjUnifiedKey = "memory.high"
	adjUnified    = "314572800" // 300 MiB, whole pages
	adjOOMScore   = 500
	adjNofileSoft = 512
	adjNofileHard = 1024
	adjNice       = 5
	adjMountPoint = "/nri-check-mnt"
	adjDevicePath = "/dev/nri-check-null"
	adjSysctl     = "kernel.shm_rmid_forced"
	adjArg        = "nri-check-arg"
	adjSeccompOff = "kexec_load"
)

// adjustCases is the table of adjustable fields the checker checks. Not
// checked: blockio_class and rdt_class (they name classes of the runtime's
// own configuration), net_devices (they move a host network device), and
// removals of what CRI set (NRI forwards removal markers to the runtime
// for mounts only: upstream's library drops an environment variable's,
// and nrikit's does the same).
var adjustCases = []adjustCase{
	{
		field: "annotations", decides: "adds an annotation",
		adjust: func(r *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddAnnotation("nri-check.nrikit.dev/adjusted", r.check.ID)
			return ""
		},
		spec: func(r *run, s *rspec.Spec) error {
			return fieldIs("annotation nri-check.nrikit.dev/adjusted", s.Annotations["nri-check.nrikit.dev/adjusted"], r.check.ID)
		},
	},
	{
		field: "env", decides: "adds NRI_CHECK_ADJUSTED=yes (and keeps NRI_CHECK, which CRI set)",
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddEnv("NRI_CHECK_ADJUSTED", "yes")
			return ""
		},
		spec:  func(_ *run, s *rspec.Spec) error { return envHas(s.Process.Env) },
		files: []string{"/proc/1/environ"},
		inside: func(_ *run, _, out string) error {
			return envHas(strings.Split(out, "\x00"))
		},
	},
	{
		field: "mounts", decides: "adds a tmpfs at " + adjMountPoint,
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddMount(&api.Mount{Destination: adjMountPoint, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "size=1m"}})
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if !slices.ContainsFunc(s.Mounts, func(m rspec.Mount) bool { return m.Destination == adjMountPoint && m.Type == "tmpfs" }) {
				return fmt.Errorf("no tmpfs mount at %s", adjMountPoint)
			}
			return nil
		},
		files: []string{"/proc/1/mountinfo"}, inside: containsText(" " + adjMountPoint + " "),
	},
	{
		field: "args", decides: "changes the command line: its last argument, if a number N (sleep N), to N+1, else " +
			"appends the argument " + adjArg,
		adjust: func(r *run, ev *event, a *api.ContainerAdjustment) string {
			args := slices.Clone(ev.Ctr.GetArgs())
			if len(args) == 0 {
				return "the runtime sends no command line to change"
			}
			if n, err := strconv.Atoi(args[len(args)-1]); err == nil {
				args[len(args)-1] = strconv.Itoa(n + 1)
			} else {
				args = append(args, adjArg)
			}
			r.setNote(args[len(args)-1])
			a.SetArgs(args)
			return ""
		},
		spec: func(r *run, s *rspec.Spec) error {
			if n := len(s.Process.Args); n == 0 || s.Process.Args[n-1] != r.note() {
				return fmt.Errorf("process.args %q do not end in %q", s.Process.Args, r.note())
			}
			return nil
		},
		files: []string{"/proc/1/cmdline"},
		inside: func(r *run, _, out string) error {
			if args := strings.Split(strings.TrimRight(out, "\x00"), "\x00"); args[len(args)-1] != r.note() {
				return fmt.Errorf("the command line %q does not end in %q", clip(out, 100), r.note())
			}
			return nil
		},
	},
	{
		field: "rlimits", decides: fmt.Sprintf("sets RLIMIT_NOFILE to %d/%d", adjNofileSoft, adjNofileHard),
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddRlimit("RLIMIT_NOFILE", adjNofileHard, adjNofileSoft)
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if !slices.Contains(s.Process.Rlimits, rspec.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: adjNofileHard, Soft: adjNofileSoft}) {
				return fmt.Errorf("process.rlimits %v lack RLIMIT_NOFILE %d/%d", s.Process.Rlimits, adjNofileSoft, adjNofileHard)
			}
			return nil
		},
		files: []string{"/proc/1/limits"},
		inside: func(_ *run, _, out string) error {
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(strings.TrimPrefix(l, "Max open files")); strings.HasPrefix(l, "Max open files") && len(f) >= 2 {
					return fieldIs("Max open files", f[0]+"/"+f[1], fmt.Sprintf("%d/%d", adjNofileSoft, adjNofileHard))
				}
			}
			return errors.New("no Max open files line")
		},
	},
	{
		field: "memory limit", decides: fmt.Sprintf("sets the memory limit to %d", adjMemory),
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxMemoryLimit(adjMemory)
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if m := resources(s).Memory; m == nil || m.Limit == nil || *m.Limit != adjMemory {
				return fmt.Errorf("linux.resources.memory.limit is not %d", adjMemory)
			}
			return nil
		},
		files: []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"},
		inside: func(_ *run, _, out string) error {
			return fieldIs("the limit", firstLine(out), strconv.Itoa(adjMemory))
		},
	},
	{
		field: "cpu quota", decides: fmt.Sprintf("sets the CPU quota and period to %d/%d", adjCPUQuota, adjCPUPeriod),
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxCPUQuota(adjCPUQuota)
			a.SetLinuxCPUPeriod(adjCPUPeriod)
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if c := resources(s).CPU; c == nil || c.Quota == nil || *c.Quota != adjCPUQuota || c.Period == nil || *c.Period != adjCPUPeriod {
				return fmt.Errorf("linux.resources.cpu quota/period are not %d/%d", adjCPUQuota, adjCPUPeriod)
			}
			return nil
		},
		files: []string{"/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"},
		inside: func(_ *run, file, out string) error {
			if strings.HasSuffix(file, "cpu.max") {
				return fieldIs("cpu.max", firstLine(out), fmt.Sprintf("%d %d", adjCPUQuota, adjCPUPeriod))
			}
			return fieldIs("cpu.cfs_quota_us", firstLine(out), strconv.Itoa(adjCPUQuota))
		},
	},
	{
		field: "cpuset", decides: "pins the container to CPU 0 and memory node 0",
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxCPUSetCPUs("0")
			a.SetLinuxCPUSetMems("0")
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if c := resources(s).CPU; c == nil || c.Cpus != "0" || c.Mems != "0" {
				return errors.New("linux.resources.cpu cpus/mems are not 0/0")
			}
			return nil
		},
		files: []string{"/proc/1/status"}, inside: statusField("Cpus_allowed_list", "0"),
	},
	{
		field: "pids limit", decides: fmt.Sprintf("sets the pids limit to %d", adjPids),
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxPidLimits(adjPids)
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if p := resources(s).Pids; p == nil || p.Limit == nil || *p.Limit != adjPids {
				return fmt.Errorf("linux.resources.pids.limit is not %d", adjPids)
			}
			return nil
		},
		files:  []string{"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"},
		inside: func(_ *run, _, out string) error { return fieldIs("pids.max", firstLine(out), strconv.Itoa(adjPids)) },
	},
	{
		field: "unified", decides: "sets the cgroup v2 value " + adjUnifiedKey + "=" + adjUnified + " (skipped on a node without cgroup v2)",
		unmet: func(*run) string {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
				return "the node has no cgroup v2 hierarchy at /sys/fs/cgroup"
			}
			return ""
		},
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddLinuxUnified(adjUnifiedKey, adjUnified)
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			return fieldIs("linux.resources.unified["+adjUnifiedKey+"]", resources(s).Unified[adjUnifiedKey], adjUnified)
		},
		files:  []string{"/sys/fs/cgroup/" + adjUnifiedKey},
		inside: func(_ *run, _, out string) error { return fieldIs(adjUnifiedKey, firstLine(out), adjUnified) },
	},
	{
		field: "oom_score_adj", decides: fmt.Sprintf("sets oom_score_adj to %d", adjOOMScore),
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			v := adjOOMScore
			a.SetLinuxOomScoreAdj(&v)
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Process.OOMScoreAdj == nil || *s.Process.OOMScoreAdj != adjOOMScore {
				return fmt.Errorf("process.oomScoreAdj is not %d", adjOOMScore)
			}
			return nil
		},
		files: []string{"/proc/1/oom_score_adj"},
		inside: func(_ *run, _, out string) error {
			return fieldIs("oom_score_adj", firstLine(out), strconv.Itoa(adjOOMScore))
		},
	},
	{
		field: "devices", decides: "adds the character device 1:3 (null) at " + adjDevicePath,
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddDevice(&api.LinuxDevice{Path: adjDevicePath, Type: "c", Major: 1, Minor: 3, FileMode: &api.OptionalFileMode{Value: 0o666}})
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Linux == nil || !slices.ContainsFunc(s.Linux.Devices, func(d rspec.LinuxDevice) bool { return d.Path == adjDevicePath }) {
				return fmt.Errorf("linux.devices lack %s", adjDevicePath)
			}
			return nil
		},
		// Reading the device succeeds (empty) only if it exists and the
		// device cgroup allows it.
		files: []string{adjDevicePath}, inside: func(_ *run, _, out string) error { return fieldIs("what it reads", out, "") },
	},
	{
		field: "hooks", decides: "adds a createRuntime hook, /bin/sh on the node writing a file the checker then finds",
		needs: []Need{NeedHostPID},
		unmet: func(*run) string {
			if _, err := os.Stat("/bin/sh"); err != nil {
				return "no /bin/sh on the node for the hook"
			}
			return ""
		},
		adjust: func(r *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{{Path: "/bin/sh", Args: []string{"sh", "-c", "echo ran > " + hookMark(r)}}}})
			return ""
		},
		spec: func(r *run, s *rspec.Spec) error {
			if s.Hooks == nil || !slices.ContainsFunc(s.Hooks.CreateRuntime, func(h rspec.Hook) bool { return slices.Contains(h.Args, "echo ran > "+hookMark(r)) }) {
				return errors.New("hooks.createRuntime lack the hook")
			}
			return nil
		},
		effect: func(r *run) error {
			if _, err := os.Stat(hookMark(r)); err != nil {
				return fmt.Errorf("the hook did not run: %v", err)
			}
			return nil
		},
	},
	{
		field: "sysctl", decides: "sets " + adjSysctl + "=1 (the pod's own IPC namespace)",
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxSysctl(adjSysctl, "1")
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Linux == nil {
				return errors.New("no linux section")
			}
			return fieldIs("linux.sysctl["+adjSysctl+"]", s.Linux.Sysctl[adjSysctl], "1")
		},
		files:  []string{"/proc/sys/" + strings.ReplaceAll(adjSysctl, ".", "/")},
		inside: func(_ *run, _, out string) error { return fieldIs(adjSysctl, firstLine(out), "1") },
	},
	{
		field: "seccomp policy", decides: "sets a seccomp policy allowing all but " + adjSeccompOff,
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW",
				Syscalls: []*api.LinuxSyscall{{Names: []string{adjSeccompOff}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &api.OptionalUInt32{Value: 1}}}})
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Linux == nil || s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != rspec.ActAllow ||
				!slices.ContainsFunc(s.Linux.Seccomp.Syscalls, func(c rspec.LinuxSyscall) bool { return slices.Contains(c.Names, adjSeccompOff) }) {
				return errors.New("linux.seccomp is not the policy")
			}
			return nil
		},
		files: []string{"/proc/1/status"}, inside: statusField("Seccomp", "2"),
	},
	{
		field: "io priority", decides: "sets the I/O priority to best effort, level 4",
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxIOPriority(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4})
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if p := s.Process.IOPriority; p == nil || p.Class != rspec.IOPRIO_CLASS_BE || p.Priority != 4 {
				return errors.New("process.ioPriority is not best effort, 4")
			}
			return nil
		},
	},
	{
		field: "scheduler", decides: fmt.Sprintf("sets the scheduling policy SCHED_OTHER with nice %d", adjNice),
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxScheduler(&api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_OTHER, Nice: adjNice})
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if sc := s.Process.Scheduler; sc == nil || sc.Policy != rspec.SchedOther || sc.Nice != adjNice {
				return fmt.Errorf("process.scheduler is not SCHED_OTHER, nice %d", adjNice)
			}
			return nil
		},
	},
	{
		field: "namespaces", decides: "gives the container a UTS namespace of its own",
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "uts"})
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Linux == nil || !slices.Contains(s.Linux.Namespaces, rspec.LinuxNamespace{Type: rspec.UTSNamespace}) {
				return errors.New("linux.namespaces lack a new uts namespace")
			}
			return nil
		},
	},
	{
		field: "memory policy", decides: "sets the NUMA memory policy MPOL_BIND to node 0 (skipped without NUMA)",
		unmet: func(*run) string {
			if _, err := os.Stat("/sys/devices/system/node/node0"); err != nil {
				return "the node has no NUMA memory nodes"
			}
			return ""
		},
		adjust: func(_ *run, _ *event, a *api.ContainerAdjustment) string {
			a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_BIND, "0")
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Linux == nil || s.Linux.MemoryPolicy == nil || s.Linux.MemoryPolicy.Mode != rspec.MpolBind || s.Linux.MemoryPolicy.Nodes != "0" {
				return errors.New("linux.memoryPolicy is not MPOL_BIND to node 0")
			}
			return nil
		},
	},
	{
		field: "cgroups path", decides: "appends -nri to the container's cgroups path",
		adjust: func(_ *run, ev *event, a *api.ContainerAdjustment) string {
			p := ev.Ctr.GetLinux().GetCgroupsPath()
			if p == "" {
				return "the runtime sends no cgroups path to change"
			}
			a.SetLinuxCgroupsPath(p + "-nri")
			return ""
		},
		spec: func(_ *run, s *rspec.Spec) error {
			if s.Linux == nil || !strings.HasSuffix(s.Linux.CgroupsPath, "-nri") {
				return errors.New("linux.cgroupsPath does not end in -nri")
			}
			return nil
		},
		files: []string{"/proc/1/cgroup"}, inside: containsText("-nri"),
	},
	{
		field: "CDI device", needs: []Need{NeedCDIDevice}, decides: "injects the CDI device of --cdi-device",
		adjust: func(r *run, _ *event, a *api.ContainerAdjustment) string {
			a.AddCDIDevice(&api.CDIDevice{Name: r.cfg.CDIDevice})
			return ""
		},
		compare: cdiEdits,
	},
}

// cdiEdits says what a CDI device added to a spec: environment
// variables, devices, mounts or hooks.
func cdiEdits(base, got *rspec.Spec) (string, error) {
	var added []string
	for _, kv := range got.Process.Env {
		if !slices.Contains(base.Process.Env, kv) {
			added = append(added, "env "+kv)
		}
	}
	if got.Linux != nil && base.Linux != nil {
		for _, d := range got.Linux.Devices {
			if !slices.ContainsFunc(base.Linux.Devices, func(b rspec.LinuxDevice) bool { return b.Path == d.Path }) {
				added = append(added, "device "+d.Path)
			}
		}
	}
	for _, m := range got.Mounts {
		if !slices.ContainsFunc(base.Mounts, func(b rspec.Mount) bool { return b.Destination == m.Destination }) {
			added = append(added, "mount "+m.Destination)
		}
	}
	if len(added) == 0 {
		return "", errors.New("the spec has no environment variable, device or mount the same container without the device lacks")
	}
	return strings.Join(added, ", "), nil
}

// hookMark is the file the hook adjustment's hook writes.
func hookMark(r *run) string { return filepath.Join(r.logDir, "hook-"+r.check.ID) }

// envHas checks the adjusted environment.
func envHas(env []string) error {
	switch {
	case !slices.Contains(env, "NRI_CHECK_ADJUSTED=yes"):
		return errors.New("no NRI_CHECK_ADJUSTED=yes")
	case !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NRI_CHECK=") }):
		return errors.New("NRI_CHECK, which CRI set, is gone")
	}
	return nil
}

// resources returns the spec's Linux resources, never nil.
func resources(s *rspec.Spec) *rspec.LinuxResources {
	if s.Linux == nil || s.Linux.Resources == nil {
		return &rspec.LinuxResources{}
	}
	return s.Linux.Resources
}

// containsText judges a file that must hold want.
func containsText(want string) func(*run, string, string) error {
	return func(_ *run, _, out string) error {
		if !strings.Contains(out, want) {
			return fmt.Errorf("no %q", want)
		}
		return nil
	}
}

// statusField judges /proc/PID/status's field key.
func statusField(key, want string) func(*run, string, string) error {
	return func(_ *run, _, out string) error {
		for _, l := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && k == key {
				return fieldIs(key, strings.TrimSpace(v), want)
			}
		}
		return fmt.Errorf("no %s", key)
	}
}
