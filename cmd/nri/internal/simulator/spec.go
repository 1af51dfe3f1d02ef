package simulator

import (
	"fmt"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
)

// defaultPath is the PATH of every simulated container.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// defaultCapabilities are the capabilities containerd grants by default.
func defaultCapabilities() []string {
	return []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
		"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
		"CAP_KILL", "CAP_AUDIT_WRITE"}
}

// defaultMounts are the mounts every container gets, as with containerd.
func defaultMounts() []rspec.Mount {
	return []rspec.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
	}
}

// newSpec returns the OCI spec a runtime would propose for the container
// before any plugin ran: the process from the scenario (arguments,
// environment after PATH and HOSTNAME), containerd's default mounts and
// capabilities followed by the scenario's mounts, the pod's namespaces,
// and the cgroups path, resources and OOM score adjustment that kubelet
// and containerd derive from the pod's requests and limits (k), with the
// scenario's resources set over them.
func newSpec(k *kube, pod *scenario.Pod, ctr *scenario.Container, pid uint32) *rspec.Spec {
	cgroupsPath, res, oomScoreAdj := k.containerLinux(pod, ctr)
	args := slices.Clone(ctr.Args)
	if len(args) == 0 {
		args = []string{"/bin/sh"}
	}
	env := append([]string{defaultPath, "HOSTNAME=" + pod.Name}, ctr.Env...)
	caps := defaultCapabilities()
	mounts := defaultMounts()
	for _, m := range ctr.Mounts {
		mounts = append(mounts, rspec.Mount{Destination: m.Destination, Type: m.Type, Source: m.Source, Options: slices.Clone(m.Options)})
	}
	annotations := map[string]string{
		"io.kubernetes.cri.container-type":    "container",
		"io.kubernetes.cri.container-name":    ctr.Name,
		"io.kubernetes.cri.image-name":        ctr.Image,
		"io.kubernetes.cri.sandbox-id":        pod.ID,
		"io.kubernetes.cri.sandbox-name":      pod.Name,
		"io.kubernetes.cri.sandbox-namespace": pod.Namespace,
		"io.kubernetes.cri.sandbox-uid":       pod.UID,
	}
	for k, v := range ctr.Annotations {
		annotations[k] = v
	}
	nsPath := func(ns string) string { return fmt.Sprintf("/proc/%d/ns/%s", pid, ns) }
	return &rspec.Spec{
		Version:  rspec.Version,
		Hostname: pod.Name,
		Root:     &rspec.Root{Path: "rootfs"},
		Process: &rspec.Process{
			Args: args,
			Env:  env,
			Cwd:  "/",
			User: rspec.User{UID: 0, GID: 0},
			Capabilities: &rspec.LinuxCapabilities{
				Bounding: caps, Effective: slices.Clone(caps), Permitted: slices.Clone(caps),
			},
			Rlimits:         []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1048576, Soft: 1048576}},
			OOMScoreAdj:     &oomScoreAdj,
			NoNewPrivileges: false,
		},
		Mounts:      mounts,
		Annotations: annotations,
		Linux: &rspec.Linux{
			CgroupsPath: cgroupsPath,
			Namespaces: []rspec.LinuxNamespace{
				{Type: rspec.PIDNamespace},
				{Type: rspec.IPCNamespace, Path: nsPath("ipc")},
				{Type: rspec.UTSNamespace, Path: nsPath("uts")},
				{Type: rspec.MountNamespace},
				{Type: rspec.NetworkNamespace, Path: nsPath("net")},
			},
			Resources:     res,
			MaskedPaths:   []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

// resources converts the resources of an updateContainer step; the
// device cgroup denies everything by default, as with containerd.
func resources(r *scenario.Resources) *rspec.LinuxResources {
	out := &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	overlay(out, r)
	return out
}

// overlay sets the scenario's resources r over out: each field given.
func overlay(out *rspec.LinuxResources, r *scenario.Resources) {
	if r == nil {
		return
	}
	if r.CPUShares != nil || r.CPUQuota != nil || r.CPUPeriod != nil || r.CpusetCpus != "" || r.CpusetMems != "" {
		if out.CPU == nil {
			out.CPU = &rspec.LinuxCPU{}
		}
		setIf(&out.CPU.Shares, r.CPUShares)
		setIf(&out.CPU.Quota, r.CPUQuota)
		setIf(&out.CPU.Period, r.CPUPeriod)
		if r.CpusetCpus != "" {
			out.CPU.Cpus = r.CpusetCpus
		}
		if r.CpusetMems != "" {
			out.CPU.Mems = r.CpusetMems
		}
	}
	if r.MemoryLimit != nil {
		limit := int64(*r.MemoryLimit)
		if out.Memory == nil {
			out.Memory = &rspec.LinuxMemory{}
		}
		out.Memory.Limit = &limit
	}
}

// setIf sets *dst to a copy of *v if v is not nil.
func setIf[T any](dst **T, v *T) {
	if v != nil {
		c := *v
		*dst = &c
	}
}
