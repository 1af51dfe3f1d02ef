package ocispec

import (
	"maps"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// ContainerMeta is what a runtime knows about a container besides its
// OCI spec.
type ContainerMeta struct {
	// ID is the container's ID.
	ID string
	// PodSandboxID is the ID of the container's pod.
	PodSandboxID string
	// Name is the container's name.
	Name string
	// State is the container's lifecycle state.
	State api.ContainerState
	// Labels are the container's labels.
	Labels map[string]string
	// Image identifies the container's image.
	Image *api.Image
	// CreatedAt, StartedAt and FinishedAt are Unix times in nanoseconds.
	CreatedAt, StartedAt, FinishedAt int64
	// Pid is the container's process ID, if it runs.
	Pid uint32
	// ExitCode, StatusReason and StatusMessage describe a stopped
	// container.
	ExitCode                    int32
	StatusReason, StatusMessage string
	// SeccompProfile is the seccomp profile the container was asked for.
	SeccompProfile *api.SecurityProfile
	// BlockIOClass and RDTClass are the container's classes, if any (the
	// spec holds only their resolved settings).
	BlockIOClass, RDTClass string
	// CDIDevices are the fully-qualified names of the container's CDI
	// devices. If nil, the names recorded in the CDIAnnotationKey
	// annotation are used.
	CDIDevices []string
}

// ToContainer describes a container, given its OCI spec and metadata, as
// the protocol's Container: args, env, mounts, hooks, Linux settings
// (namespaces, devices, resources, OOM score adjustment, cgroups path, I/O
// priority, seccomp policy, sysctls, net devices, scheduler, RDT), rlimits,
// user and annotations. The result shares no memory with spec or meta.
func ToContainer(spec *rspec.Spec, meta ContainerMeta) *api.Container {
	c := &api.Container{
		Id:            meta.ID,
		PodSandboxId:  meta.PodSandboxID,
		Name:          meta.Name,
		State:         meta.State,
		Labels:        maps.Clone(meta.Labels),
		Pid:           meta.Pid,
		CreatedAt:     meta.CreatedAt,
		StartedAt:     meta.StartedAt,
		FinishedAt:    meta.FinishedAt,
		ExitCode:      meta.ExitCode,
		StatusReason:  meta.StatusReason,
		StatusMessage: meta.StatusMessage,
	}
	if meta.Image != nil {
		c.Image = proto.Clone(meta.Image).(*api.Image)
	}
	if spec == nil {
		spec = &rspec.Spec{}
	}
	c.Annotations = maps.Clone(spec.Annotations)
	c.Mounts = mountsFromOCI(spec.Mounts)
	c.Hooks = hooksFromOCI(spec.Hooks)
	if p := spec.Process; p != nil {
		c.Args = slices.Clone(p.Args)
		c.Env = slices.Clone(p.Env)
		c.Rlimits = rlimitsFromOCI(p.Rlimits)
		c.User = &api.User{Uid: p.User.UID, Gid: p.User.GID, AdditionalGids: slices.Clone(p.User.AdditionalGids)}
	}
	c.Linux = linuxFromOCI(spec, meta)
	names := meta.CDIDevices
	if names == nil {
		names = cdiFromAnnotations(spec.Annotations)
	}
	for _, n := range names {
		c.CDIDevices = append(c.CDIDevices, &api.CDIDevice{Name: n})
	}
	return c
}

// linuxFromOCI builds a Container's Linux part.
func linuxFromOCI(spec *rspec.Spec, meta ContainerMeta) *api.LinuxContainer {
	l := &api.LinuxContainer{}
	if meta.SeccompProfile != nil {
		l.SeccompProfile = proto.Clone(meta.SeccompProfile).(*api.SecurityProfile)
	}
	if p := spec.Process; p != nil {
		if p.OOMScoreAdj != nil {
			l.OomScoreAdj = &api.OptionalInt{Value: int64(*p.OOMScoreAdj)}
		}
		l.IoPriority = ioPriorityFromOCI(p.IOPriority)
		l.Scheduler = schedulerFromOCI(p.Scheduler)
	}
	if o := spec.Linux; o != nil {
		l.Namespaces = namespacesFromOCI(o.Namespaces)
		l.Devices = devicesFromOCI(o.Devices)
		l.Resources = ToLinuxResources(o.Resources)
		l.CgroupsPath = o.CgroupsPath
		l.SeccompPolicy = seccompFromOCI(o.Seccomp)
		l.Sysctl = maps.Clone(o.Sysctl)
		for host, d := range o.NetDevices {
			if l.NetDevices == nil {
				l.NetDevices = map[string]*api.LinuxNetDevice{}
			}
			l.NetDevices[host] = &api.LinuxNetDevice{Name: d.Name}
		}
		l.Rdt = rdtFromOCI(o.IntelRdt)
	}
	if meta.BlockIOClass != "" || meta.RDTClass != "" {
		if l.Resources == nil {
			l.Resources = &api.LinuxResources{}
		}
		if meta.BlockIOClass != "" {
			l.Resources.BlockioClass = &api.OptionalString{Value: meta.BlockIOClass}
		}
		if meta.RDTClass != "" {
			l.Resources.RdtClass = &api.OptionalString{Value: meta.RDTClass}
		}
	}
	return l
}
