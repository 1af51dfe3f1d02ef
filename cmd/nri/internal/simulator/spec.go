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

// podCgroupParent is the cgroup parent of a pod (systemd driver,
// best-effort QoS, as kubelet names it).
func podCgroupParent(p *scenario.Pod) string {
	return "kubepods-besteffort-pod" + p.UID + ".slice"
}

// newSpec returns the OCI spec a runtime would propose for the container
// before any plugin ran: the process from the scenario (arguments,
// environment after PATH and HOSTNAME), containerd's default mounts and
// capabilities followed by the scenario's mounts, the pod's namespaces and
// the scenario's resources.
func newSpec(pod *scenario.Pod, ctr *scenario.Container, pid uint32) *rspec.Spec {
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
			OOMScoreAdj:     intPtr(1000),
			NoNewPrivileges: false,
		},
		Mounts:      mounts,
		Annotations: annotations,
		Linux: &rspec.Linux{
			CgroupsPath: podCgroupParent(pod) + ":cri-containerd:" + ctr.ID,
			Namespaces: []rspec.LinuxNamespace{
				{Type: rspec.PIDNamespace},
				{Type: rspec.IPCNamespace, Path: nsPath("ipc")},
				{Type: rspec.UTSNamespace, Path: nsPath("uts")},
				{Type: rspec.MountNamespace},
				{Type: rspec.NetworkNamespace, Path: nsPath("net")},
			},
			Resources:     resources(ctr.Resources),
			MaskedPaths:   []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

func intPtr(v int) *int { return &v }

// resources converts the scenario's resources; the device cgroup denies
// everything by default, as with containerd.
func resources(r *scenario.Resources) *rspec.LinuxResources {
	out := &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	if r == nil {
		return out
	}
	if r.CPUShares != nil || r.CPUQuota != nil || r.CPUPeriod != nil || r.CpusetCpus != "" || r.CpusetMems != "" {
		out.CPU = &rspec.LinuxCPU{Shares: r.CPUShares, Quota: r.CPUQuota, Period: r.CPUPeriod, Cpus: r.CpusetCpus, Mems: r.CpusetMems}
	}
	if r.MemoryLimit != nil {
		limit := int64(*r.MemoryLimit)
		out.Memory = &rspec.LinuxMemory{Limit: &limit}
	}
	return out
}
