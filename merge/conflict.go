package merge

import (
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// ErrUpdateDuringCreation is wrapped by the error Create.Apply returns when
// a plugin asks to update the container that is being created (it must
// adjust it instead).
var ErrUpdateDuringCreation = errors.New("update of a container during its creation")

// ConflictError reports that two plugins set the same field (or the same
// entry of a keyed field) of a container.
type ConflictError struct {
	// ContainerID is the container whose field both plugins set.
	ContainerID string
	// Container is that container as NAMESPACE/POD/NAME, when known (a
	// conflict while a container is created); messages use it instead of
	// the ID.
	Container string
	// Field is the contested field.
	Field api.Field
	// Key is the contested entry of a keyed field (an environment variable
	// name, a mount destination, a device path, ...); empty for simple
	// fields.
	Key string
	// Plugins are the field's owner and the plugin that tried to set it
	// next, in that order ("IDX-NAME").
	Plugins [2]string
}

// Error describes the conflict, e.g.
// `plugins "10-a" and "20-b" both adjust env "FOO" of container "ml/trainer/train"`
// (or of the container's ID when its name is not known).
func (e *ConflictError) Error() string {
	what := FieldName(e.Field)
	if e.Key != "" {
		what += fmt.Sprintf(" %q", e.Key)
	}
	ctr := e.Container
	if ctr == "" {
		ctr = e.ContainerID
	}
	return fmt.Sprintf("plugins %q and %q both adjust %s of container %q",
		e.Plugins[0], e.Plugins[1], what, ctr)
}

// FieldName returns a short human-readable name of f, as used in error
// messages ("env", "memory limit", ...).
func FieldName(f api.Field) string {
	switch f {
	case api.Field_Annotations:
		return "annotation"
	case api.Field_Mounts:
		return "mount"
	case api.Field_OciHooks:
		return "OCI hooks"
	case api.Field_Devices:
		return "device"
	case api.Field_CdiDevices:
		return "CDI device"
	case api.Field_Env:
		return "env"
	case api.Field_Args:
		return "args"
	case api.Field_MemLimit:
		return "memory limit"
	case api.Field_MemReservation:
		return "memory reservation"
	case api.Field_MemSwapLimit:
		return "memory swap limit"
	case api.Field_MemKernelLimit:
		return "kernel memory limit"
	case api.Field_MemTCPLimit:
		return "kernel TCP memory limit"
	case api.Field_MemSwappiness:
		return "memory swappiness"
	case api.Field_MemDisableOomKiller:
		return "OOM killer setting"
	case api.Field_MemUseHierarchy:
		return "memory hierarchy setting"
	case api.Field_CPUShares:
		return "CPU shares"
	case api.Field_CPUQuota:
		return "CPU quota"
	case api.Field_CPUPeriod:
		return "CPU period"
	case api.Field_CPURealtimeRuntime:
		return "CPU realtime runtime"
	case api.Field_CPURealtimePeriod:
		return "CPU realtime period"
	case api.Field_CPUSetCPUs:
		return "cpuset CPUs"
	case api.Field_CPUSetMems:
		return "cpuset memory nodes"
	case api.Field_PidsLimit:
		return "pids limit"
	case api.Field_HugepageLimits:
		return "hugepage limit"
	case api.Field_BlockioClass:
		return "block I/O class"
	case api.Field_RdtClass:
		return "RDT class"
	case api.Field_CgroupsUnified:
		return "unified cgroup resource"
	case api.Field_CgroupsPath:
		return "cgroups path"
	case api.Field_OomScoreAdj:
		return "OOM score adjustment"
	case api.Field_Rlimits:
		return "rlimit"
	case api.Field_IoPriority:
		return "I/O priority"
	case api.Field_SeccompPolicy:
		return "seccomp policy"
	case api.Field_Namespace:
		return "namespace"
	case api.Field_Sysctl:
		return "sysctl"
	case api.Field_LinuxNetDevices:
		return "network device"
	case api.Field_LinuxSched:
		return "scheduling attributes"
	case api.Field_RdtClosID:
		return "RDT CLOS ID"
	case api.Field_RdtSchemata:
		return "RDT schemata"
	case api.Field_RdtEnableMonitoring:
		return "RDT monitoring"
	case api.Field_MemoryPolicy:
		return "memory policy"
	}
	return f.String()
}
