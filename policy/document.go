package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Document is a policy file as written: the YAML keys are the field tags.
// Parse decodes it strictly (unknown and duplicate keys and values of the
// wrong type are errors with their line) and compiles it into a [Policy].
// docs/policy.md documents every key.
type Document struct {
	// Version is the format's version; 0 (absent) or 1.
	Version int `yaml:"version"`
	// Required lists the plugins (NAME or IDX-NAME, and the identity
	// they must have) that must be registered for a pod to be created
	// and for a container to be created.
	Required []RequirementSpec `yaml:"required"`
	// Grants are the grants of named plugins, tried in order: the first
	// one whose plugins match a plugin is its grant.
	Grants []GrantSpec `yaml:"grants"`
	// Default is the grant of the plugins no entry of Grants matches.
	// Absent, those plugins may change nothing.
	Default *GrantSpec `yaml:"default"`
	// Action is what the runtime does with a change a grant does not
	// allow, for the grants that do not say: "deny" (absent: the
	// default) refuses it, "audit" logs and counts it and applies it.
	Action string `yaml:"action"`
}

// GrantSpec is what a plugin may do.
type GrantSpec struct {
	// Plugins are the plugins the grant is for: an IDX-NAME ("10-gpu"),
	// a NAME ("gpu"), an index ("10") or a glob over the IDX-NAME or the
	// NAME ("*-injector"). Required in an entry of grants, absent in
	// default.
	Plugins []string `yaml:"plugins"`
	// Identity is who an external plugin must be to get the grant (see
	// IdentitySpec); absent, the grant is for launched plugins only.
	Identity *IdentitySpec `yaml:"identity"`
	// Where restricts the pods and containers the plugin is sent events
	// about and may update or evict: the runtime ANDs it with the
	// plugin's own scope. Absent: everywhere.
	Where *WhereSpec `yaml:"where"`
	// Adjust is what the plugin may change in a container being created.
	// Absent: nothing.
	Adjust *AdjustSpec `yaml:"adjust"`
	// Update is what the plugin may change in running containers.
	// Absent: nothing.
	Update *ResourcesSpec `yaml:"update"`
	// Evict allows the plugin to evict containers (within Where).
	Evict bool `yaml:"evict"`
	// Action is what the runtime does with a change the grant does not
	// allow: "deny" or "audit" (see Document.Action); absent, the
	// policy's.
	Action string `yaml:"action"`
}

// WhereSpec is a scope, in the terms of api.PluginScope (see package
// filter for the semantics of each criterion).
type WhereSpec struct {
	Namespaces           []string          `yaml:"namespaces"`
	PodLabelSelector     string            `yaml:"podLabelSelector"`
	PodAnnotations       []AnnotationMatch `yaml:"podAnnotations"`
	ContainerAnnotations []AnnotationMatch `yaml:"containerAnnotations"`
	RuntimeHandlers      []string          `yaml:"runtimeHandlers"`
	ContainerNames       []string          `yaml:"containerNames"`
	Images               []string          `yaml:"images"`
	CEL                  string            `yaml:"cel"`
}

// AnnotationMatch is a condition on an annotation: it is present
// (op exists, the default), its value equals value (op equals) or
// matches the regular expression value (op regex).
type AnnotationMatch struct {
	Key   string `yaml:"key"`
	Op    string `yaml:"op"`
	Value string `yaml:"value"`
}

// AdjustSpec is what a plugin may change in a container being created.
// A field that is absent (or an empty list) allows no change of its kind;
// removing an entry (a key marked with "-") is a change of its kind too,
// checked against the same rules as setting it.
type AdjustSpec struct {
	// Annotations are globs over the keys of the annotations the plugin
	// may set or remove.
	Annotations []string `yaml:"annotations"`
	// Mounts are the mounts the plugin may add or remove.
	Mounts *MountsSpec `yaml:"mounts"`
	// Env are globs over the names of the environment variables the
	// plugin may set or remove.
	Env []string `yaml:"env"`
	// Hooks are the OCI hooks the plugin may add, whatever their stage.
	Hooks []HookSpec `yaml:"hooks"`
	// Rlimits maps each POSIX rlimit the plugin may set (RLIMIT_NOFILE)
	// to its caps.
	Rlimits map[string]RlimitSpec `yaml:"rlimits"`
	// CDIDevices are globs over the CDI device names the plugin may
	// inject ("nvidia.com/gpu=*").
	CDIDevices []string `yaml:"cdiDevices"`
	// Args allows the plugin to replace the container's command line.
	Args bool `yaml:"args"`
	// Devices are the device nodes the plugin may add or remove.
	Devices []DeviceSpec `yaml:"devices"`
	// Resources are the resources the plugin may set.
	Resources *ResourcesSpec `yaml:"resources"`
	// CgroupsPath allows the plugin to set the container's cgroup path.
	CgroupsPath bool `yaml:"cgroupsPath"`
	// OOMScoreAdj is the range of OOM score adjustments the plugin may
	// set.
	OOMScoreAdj *RangeSpec `yaml:"oomScoreAdj"`
	// IOPriority is the I/O priorities the plugin may set.
	IOPriority *IOPrioritySpec `yaml:"ioPriority"`
	// SeccompPolicy allows the plugin to replace the seccomp policy.
	SeccompPolicy bool `yaml:"seccompPolicy"`
	// Namespaces are the Linux namespaces the plugin may change.
	Namespaces *NamespacesSpec `yaml:"namespaces"`
	// Sysctl are globs over the sysctl keys the plugin may set or
	// remove.
	Sysctl []string `yaml:"sysctl"`
	// NetDevices are globs over the host network interfaces the plugin
	// may move into the container, or remove.
	NetDevices []string `yaml:"netDevices"`
	// Scheduler is the scheduling policies the plugin may set.
	Scheduler *SchedulerSpec `yaml:"scheduler"`
	// Rdt is the RDT (resctrl) settings the plugin may set.
	Rdt *RdtSpec `yaml:"rdt"`
	// MemoryPolicy is the NUMA memory policies the plugin may set.
	MemoryPolicy *MemoryPolicySpec `yaml:"memoryPolicy"`
}

// MountsSpec is the mounts a plugin may add or remove.
type MountsSpec struct {
	// Sources are the host directories the plugin may bind-mount, with
	// everything under them. "/" must be written to allow the host's
	// root.
	Sources []SourceSpec `yaml:"sources"`
	// Types are the mount types other than bind the plugin may add
	// (tmpfs); their source is not a host path.
	Types []string `yaml:"types"`
	// Options are globs over the options a mount may have; absent: the
	// safe set (bind flavours, ro/rw, nosuid, nodev, noexec, access
	// times, private or slave propagation).
	Options []string `yaml:"options"`
	// Destinations are globs over the paths in the container a mount may
	// have; absent: any but the system paths (see docs/policy.md).
	Destinations []string `yaml:"destinations"`
	// Remove are globs over the destinations of the mounts the plugin
	// may remove; absent: none.
	Remove []string `yaml:"remove"`
}

// SourceSpec is a host directory that may be bind-mounted.
type SourceSpec struct {
	// Path is an absolute, clean path.
	Path string `yaml:"path"`
	// ReadWrite allows read-write mounts of it; without it a bind mount
	// must be read-only (option ro or rro).
	ReadWrite bool `yaml:"readWrite"`
}

// HookSpec allows OCI hooks: the executables a glob over their path
// matches, with the arguments and the environment they may carry.
// Written as a string, it is a Path alone, which allows no argument but
// the hook's name (its path or the base of it) and no environment.
type HookSpec struct {
	// Path is a glob over the hook's path, which is absolute.
	Path string `yaml:"path"`
	// Args are globs, one per argument: the hook's arguments (its name,
	// argv[0], first) must be as many and each match its glob. Absent:
	// no argument but the hook's name.
	Args []string `yaml:"args"`
	// MoreArgs allows any arguments after those of Args (with Args
	// absent, any arguments at all).
	MoreArgs bool `yaml:"moreArgs"`
	// Env are globs over the hook's environment entries, NAME=VALUE as
	// written ("DEBUG=*"); each entry must match one. Absent: none.
	Env []string `yaml:"env"`
}

// hookSpecKeys are the keys of a HookSpec written as a mapping.
var hookSpecKeys = []string{"path", "args", "moreArgs", "env"}

// UnmarshalYAML decodes a HookSpec from a string (its path) or a mapping
// of its keys (strictly: an unknown key is a mistake, as elsewhere in
// the file).
func (h *HookSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		*h = HookSpec{Path: n.Value}
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(hookSpecKeys, k.Value) {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: field %s not found in type policy.HookSpec", k.Line, k.Value)}}
			}
		}
	}
	type fields HookSpec // without this method
	return n.Decode((*fields)(h))
}

// DeviceSpec allows device nodes: a path in the container, and the
// device it opens (type, major, minor).
type DeviceSpec struct {
	// Path is a glob over the node's path in the container.
	Path string `yaml:"path"`
	// Type is c (also allows u), b or p.
	Type string `yaml:"type"`
	// Major is required for c and b.
	Major *int64 `yaml:"major"`
	// Minor: absent, every minor of Major.
	Minor *int64 `yaml:"minor"`
}

// RlimitSpec caps an rlimit; 0 (absent) leaves that bound uncapped.
type RlimitSpec struct {
	Hard uint64 `yaml:"hard"`
	Soft uint64 `yaml:"soft"`
}

// ResourcesSpec is the resources a plugin may set, in a container being
// created (adjust.resources) or in a running one (update). An absent
// class may not be set.
type ResourcesSpec struct {
	// Memory allows the memory settings, with limit and reservation at
	// most maxLimit (if set).
	Memory *MemorySpec `yaml:"memory"`
	// CPU allows the CPU settings (shares, quota, period, cpuset).
	CPU *CPUSpec `yaml:"cpu"`
	// HugepageLimits allows hugepage limits.
	HugepageLimits *HugepagesSpec `yaml:"hugepageLimits"`
	// BlockioClasses are globs over the block I/O classes the plugin may
	// set.
	BlockioClasses []string `yaml:"blockioClasses"`
	// RdtClasses are globs over the RDT classes the plugin may set.
	RdtClasses []string `yaml:"rdtClasses"`
	// Unified are globs over the cgroup v2 unified keys the plugin may
	// set ("memory.high").
	Unified []string `yaml:"unified"`
	// Devices allows device cgroup rules.
	Devices *DeviceCgroupSpec `yaml:"devices"`
	// Pids allows the pids limit.
	Pids *PidsSpec `yaml:"pids"`
}

// MemorySpec caps memory settings.
type MemorySpec struct {
	// MaxLimit caps the limit and the reservation; 0: uncapped.
	MaxLimit Bytes `yaml:"maxLimit"`
}

// CPUSpec caps CPU settings.
type CPUSpec struct {
	// MaxShares caps the CPU shares; 0: uncapped.
	MaxShares uint64 `yaml:"maxShares"`
	// Realtime allows the realtime runtime and period.
	Realtime bool `yaml:"realtime"`
}

// HugepagesSpec caps hugepage limits.
type HugepagesSpec struct {
	// PageSizes are the page sizes ("2MB", "1GB"); absent: any.
	PageSizes []string `yaml:"pageSizes"`
	// MaxLimit caps each limit; 0: uncapped.
	MaxLimit Bytes `yaml:"maxLimit"`
}

// DeviceCgroupSpec is the device cgroup rules a plugin may set. A rule
// that denies access is always allowed once the class is granted.
type DeviceCgroupSpec struct {
	// GrantAccess allows rules that allow access to devices.
	GrantAccess bool `yaml:"grantAccess"`
}

// PidsSpec caps the pids limit.
type PidsSpec struct {
	// MaxLimit caps the limit, which must then be positive; 0: uncapped.
	MaxLimit int64 `yaml:"maxLimit"`
}

// RangeSpec is an inclusive range of integers.
type RangeSpec struct {
	Min int64 `yaml:"min"`
	Max int64 `yaml:"max"`
}

// IOPrioritySpec is the I/O priorities a plugin may set.
type IOPrioritySpec struct {
	// Classes are the classes (IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE, ...).
	Classes []string `yaml:"classes"`
}

// NamespacesSpec is the namespace changes a plugin may make, by type
// (network, ipc, uts, pid, mount, user, cgroup, time).
type NamespacesSpec struct {
	// Create are the types the plugin may give a new namespace.
	Create []string `yaml:"create"`
	// Join are the types the plugin may set to an existing namespace (a
	// path).
	Join []string `yaml:"join"`
	// Remove are the types the plugin may remove, so that the container
	// shares the host's.
	Remove []string `yaml:"remove"`
}

// SchedulerSpec is the scheduling settings a plugin may set.
type SchedulerSpec struct {
	// Policies are the policies (SCHED_OTHER, SCHED_BATCH, ...).
	Policies []string `yaml:"policies"`
	// MinNice is the lowest nice value; absent: 0 (no raised priority).
	MinNice *int32 `yaml:"minNice"`
	// MaxPriority is the highest static priority; absent: 0.
	MaxPriority *int32 `yaml:"maxPriority"`
}

// RdtSpec is the RDT settings a plugin may set.
type RdtSpec struct {
	// ClosIDs are globs over the class of service IDs.
	ClosIDs []string `yaml:"closIds"`
	// Schemata allows setting schemata.
	Schemata bool `yaml:"schemata"`
	// Monitoring allows enabling monitoring.
	Monitoring bool `yaml:"monitoring"`
}

// MemoryPolicySpec is the memory policies a plugin may set.
type MemoryPolicySpec struct {
	// Modes are the modes (MPOL_BIND, MPOL_INTERLEAVE, ...).
	Modes []string `yaml:"modes"`
}

// Bytes is a size in bytes, written as an integer or as a quantity with
// a binary (Ki, Mi, Gi, Ti) or decimal (k, M, G, T) suffix: 8Gi, 512M.
type Bytes int64

// UnmarshalYAML decodes a size.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseBytes(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: invalid size %q: want bytes, or a quantity such as 512Mi or 8G", n.Line, n.Value)}}
	}
	*b = Bytes(v)
	return nil
}

// parseBytes parses a non-negative size.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<63-1)/mult {
		return 0, fmt.Errorf("invalid size")
	}
	return v * mult, nil
}
