package api

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/ocispec"
)

// The conversions below describe parts of an OCI runtime spec as the
// protocol's messages. They go through ocispec.ToContainer, nrikit's one
// conversion of a spec, on a spec that holds only the part asked for,
// so that there is one mapping of each field.

// linuxOf converts a spec that holds only Linux settings.
func linuxOf(l *rspec.Linux) *LinuxContainer {
	return ocispec.ToContainer(&rspec.Spec{Linux: l}, ocispec.ContainerMeta{}).GetLinux()
}

// processLinuxOf converts a spec whose process holds only p's settings.
func processLinuxOf(p *rspec.Process) *LinuxContainer {
	return ocispec.ToContainer(&rspec.Spec{Process: p}, ocispec.ContainerMeta{}).GetLinux()
}

// FromOCIMounts converts OCI mounts.
func FromOCIMounts(o []rspec.Mount) []*Mount {
	if len(o) == 0 {
		return nil
	}
	return ocispec.ToContainer(&rspec.Spec{Mounts: o}, ocispec.ContainerMeta{}).GetMounts()
}

// FromOCIHooks converts OCI hooks (nil for nil).
func FromOCIHooks(o *rspec.Hooks) *Hooks {
	if o == nil {
		return nil
	}
	return ocispec.ToContainer(&rspec.Spec{Hooks: o}, ocispec.ContainerMeta{}).GetHooks()
}

// FromOCILinuxNamespaces converts OCI Linux namespaces.
func FromOCILinuxNamespaces(o []rspec.LinuxNamespace) []*LinuxNamespace {
	if len(o) == 0 {
		return nil
	}
	return linuxOf(&rspec.Linux{Namespaces: o}).GetNamespaces()
}

// FromOCILinuxDevices converts OCI Linux devices.
func FromOCILinuxDevices(o []rspec.LinuxDevice) []*LinuxDevice {
	if len(o) == 0 {
		return nil
	}
	return linuxOf(&rspec.Linux{Devices: o}).GetDevices()
}

// FromOCILinuxResources converts OCI Linux resources (nil for nil). The
// annotations are not used; upstream's signature has them.
func FromOCILinuxResources(o *rspec.LinuxResources, _ map[string]string) *LinuxResources {
	if o == nil {
		return nil
	}
	return ocispec.ToLinuxResources(o)
}

// FromOCILinuxNetDevices converts OCI Linux network devices.
func FromOCILinuxNetDevices(o map[string]rspec.LinuxNetDevice) map[string]*LinuxNetDevice {
	if len(o) == 0 {
		return nil
	}
	return linuxOf(&rspec.Linux{NetDevices: o}).GetNetDevices()
}

// FromOCILinuxSeccomp converts an OCI seccomp policy (nil for nil).
func FromOCILinuxSeccomp(o *rspec.LinuxSeccomp) *LinuxSeccomp {
	if o == nil {
		return nil
	}
	return linuxOf(&rspec.Linux{Seccomp: o}).GetSeccompPolicy()
}

// FromOCILinuxIOPriority converts an OCI I/O priority (nil for nil).
func FromOCILinuxIOPriority(o *rspec.LinuxIOPriority) *LinuxIOPriority {
	if o == nil {
		return nil
	}
	return processLinuxOf(&rspec.Process{IOPriority: o}).GetIoPriority()
}

// FromOCILinuxScheduler converts an OCI scheduler setting (nil for nil).
func FromOCILinuxScheduler(o *rspec.Scheduler) *LinuxScheduler {
	if o == nil {
		return nil
	}
	return processLinuxOf(&rspec.Process{Scheduler: o}).GetScheduler()
}
