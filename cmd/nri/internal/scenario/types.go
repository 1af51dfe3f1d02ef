package scenario

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/policy"
	"github.com/nrikit/nrikit/validator"
)

// Scenario is a decoded, checked scenario file.
type Scenario struct {
	// Name is a short name; the file's base name if not given.
	Name string `yaml:"name"`
	// Description says what the scenario shows.
	Description string `yaml:"description"`
	// Pods are the pods the steps refer to.
	Pods []*Pod `yaml:"pods"`
	// Containers are the containers the steps refer to.
	Containers []*Container `yaml:"containers"`
	// Plugins are launched by the simulated runtime.
	Plugins []*Plugin `yaml:"plugins"`
	// Node is the simulated node, as far as it shapes what its pods look
	// like; nil: the defaults (see Node).
	Node *Node `yaml:"node"`
	// DefaultValidator configures the default validator (upstream's
	// configuration keys).
	DefaultValidator *validator.Config `yaml:"defaultValidator"`
	// Policy is a policy of plugin grants (docs/policy.md) written in
	// the scenario, which the simulated runtime enforces unless nri run
	// is given one with --policy; see CompiledPolicy.
	Policy yaml.Node `yaml:"policy"`
	// CompiledPolicy is Policy compiled; nil if the scenario has none.
	// Its rules name the scenario file and their lines in it.
	CompiledPolicy *policy.Policy `yaml:"-"`
	// PolicyLine is the line of the key policy (0 without one).
	PolicyLine int `yaml:"-"`
	// Steps are the lifecycle events, in order.
	Steps []*Step `yaml:"steps"`

	// File is the name the scenario was read from.
	File string `yaml:"-"`
	// Dir is the directory relative plugin paths are resolved against
	// ("" for an embedded scenario).
	Dir string `yaml:"-"`
}

// Pod is a pod of the scenario.
type Pod struct {
	Name           string            `yaml:"name"`
	Namespace      string            `yaml:"namespace"`
	UID            string            `yaml:"uid"`
	Labels         map[string]string `yaml:"labels"`
	Annotations    map[string]string `yaml:"annotations"`
	RuntimeHandler string            `yaml:"runtimeHandler"`
	// Overhead is the pod's overhead (what its RuntimeClass adds), as
	// Kubernetes' pod.spec.overhead.
	Overhead *ResourceList `yaml:"overhead"`

	// ID is the pod's sandbox ID, derived from its namespace and name.
	ID string `yaml:"-"`
	// Line is where the pod is defined.
	Line int `yaml:"-"`
}

// Container is a container of the scenario.
type Container struct {
	Name        string            `yaml:"name"`
	Pod         string            `yaml:"pod"`
	Image       string            `yaml:"image"`
	Args        []string          `yaml:"args"`
	Env         []string          `yaml:"env"`
	Mounts      []*Mount          `yaml:"mounts"`
	Resources   *Resources        `yaml:"resources"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
	// Requests and Limits are the container's resource requirements, as
	// Kubernetes' resources.requests and resources.limits: with its pod's
	// other containers they make the pod's QoS class, cgroup parent and
	// resources, and the container's resources and OOM score adjustment,
	// as kubelet and containerd set them. Resources, if given, are set
	// over what they make.
	Requests *ResourceList `yaml:"requests"`
	Limits   *ResourceList `yaml:"limits"`

	// ID is the container's ID, derived from its pod's ID and its name.
	ID string `yaml:"-"`
	// Line is where the container is defined.
	Line int `yaml:"-"`
}

// Mount is a container mount.
type Mount struct {
	Destination string   `yaml:"destination"`
	Source      string   `yaml:"source"`
	Type        string   `yaml:"type"`
	Options     []string `yaml:"options"`
}

// Resources are a container's Linux resources. Unset fields stay unset.
type Resources struct {
	CPUShares   *uint64   `yaml:"cpuShares"`
	CPUQuota    *int64    `yaml:"cpuQuota"`
	CPUPeriod   *uint64   `yaml:"cpuPeriod"`
	CpusetCpus  string    `yaml:"cpusetCpus"`
	CpusetMems  string    `yaml:"cpusetMems"`
	MemoryLimit *Quantity `yaml:"memoryLimit"`
}

// ResourceList is CPU and memory as a Kubernetes pod spec writes them;
// an unset resource is not requested (or not limited).
type ResourceList struct {
	CPU    *CPUQuantity `yaml:"cpu"`
	Memory *Quantity    `yaml:"memory"`
}

// Node is the simulated node: how kubelet names its pods' cgroups, and
// its memory.
type Node struct {
	// CgroupDriver is kubelet's cgroup driver: systemd (the default:
	// pods under /kubepods.slice/...) or cgroupfs (under /kubepods/...).
	CgroupDriver string `yaml:"cgroupDriver"`
	// Memory is the node's memory, which the OOM score adjustment of a
	// container in a Burstable pod is relative to; default: this
	// machine's, as kubelet reads it.
	Memory *Quantity `yaml:"memory"`
}

// Plugin is a plugin the simulated runtime launches.
type Plugin struct {
	// Name is the plugin's name: a sample plugin of the nri binary
	// unless Path is set.
	Name string `yaml:"name"`
	// Index is the two-digit index.
	Index string `yaml:"index"`
	// Path is an executable to launch instead of a sample plugin, or a
	// WebAssembly plugin module (a file starting with the WASM magic
	// bytes), which the runtime loads in-process.
	Path string `yaml:"path"`
	// WASMPackage is a Go package directory (relative to the scenario
	// file) built into a WebAssembly plugin module with the Go toolchain
	// (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) before the run,
	// instead of a sample plugin or Path.
	WASMPackage string `yaml:"wasmPackage"`
	// Args are extra command-line arguments (such as a sample plugin's
	// scope flags, "-pod-selector=accel=gpu").
	Args []string `yaml:"args"`
	// Config is sent to the plugin in its Configure request.
	Config string `yaml:"config"`
	// Files are written into the plugin's working directory (relative
	// paths, no "..") before it is launched. WASM plugins have no
	// working directory (a guest has no file system).
	Files map[string]string `yaml:"files"`

	// Line is where the plugin is defined.
	Line int `yaml:"-"`
}

// FullName is the plugin's IDX-NAME.
func (p *Plugin) FullName() string { return p.Index + "-" + p.Name }

// ExpectsRefusal reports whether the step expects the answer of the
// plugin full (IDX-NAME) to be refused.
func (s *Step) ExpectsRefusal(full string) bool {
	return slices.ContainsFunc(s.ExpectRefused, func(p string) bool { return NamesPlugin(p, full) })
}

// NamesPlugin reports whether p, a plugin as a scenario names it (NAME or
// IDX-NAME), is the plugin full (IDX-NAME).
func NamesPlugin(p, full string) bool {
	_, name, _ := strings.Cut(full, "-")
	return p == full || p == name
}

// Action is what a step does.
type Action string

// The actions of steps.
const (
	RunPod          Action = "runPod"
	StopPod         Action = "stopPod"
	RemovePod       Action = "removePod"
	CreateContainer Action = "createContainer"
	StartContainer  Action = "startContainer"
	UpdateContainer Action = "updateContainer"
	StopContainer   Action = "stopContainer"
	RemoveContainer Action = "removeContainer"
)

// IsPodAction reports whether the action's target is a pod.
func (a Action) IsPodAction() bool { return a == RunPod || a == StopPod || a == RemovePod }

// Step is one lifecycle event.
type Step struct {
	RunPod          string `yaml:"runPod"`
	StopPod         string `yaml:"stopPod"`
	RemovePod       string `yaml:"removePod"`
	CreateContainer string `yaml:"createContainer"`
	StartContainer  string `yaml:"startContainer"`
	UpdateContainer string `yaml:"updateContainer"`
	StopContainer   string `yaml:"stopContainer"`
	RemoveContainer string `yaml:"removeContainer"`
	// Resources are the new resources of an updateContainer step.
	Resources *Resources `yaml:"resources"`
	// ExpectError makes the step succeed only if it fails with an error
	// containing this text.
	ExpectError string `yaml:"expectError"`
	// Expect is what the container's OCI spec must hold after a
	// container step that succeeded.
	Expect *Expect `yaml:"expect"`
	// ExpectRefused are the plugins (NAME or IDX-NAME) whose answers the
	// step expects the runtime to refuse (the policy does not allow
	// their changes): the step fails if one of them is not refused, or
	// another plugin is.
	ExpectRefused []string `yaml:"expectRefused"`

	// Action is the step's action, set by decoding.
	Action Action `yaml:"-"`
	// Pod is the step's pod (for container steps, the container's pod).
	Pod *Pod `yaml:"-"`
	// Container is the step's container, for container steps.
	Container *Container `yaml:"-"`
	// Line is where the step is defined.
	Line int `yaml:"-"`
}

// Expect is what a container step checks in the container's OCI spec
// afterwards, such as the changes a plugin is expected to have made.
type Expect struct {
	// Env are KEY=VALUE entries the process environment must contain.
	Env []string `yaml:"env"`
	// Annotations the spec must carry, with these values.
	Annotations map[string]string `yaml:"annotations"`
	// Resources are the Linux resources the spec must have: each field
	// given, with this value (such as the cpuset a resource policy
	// pins the container to).
	Resources *Resources `yaml:"resources"`
}

// targets returns the step's action fields by action.
func (s *Step) targets() map[Action]string {
	return map[Action]string{
		RunPod: s.RunPod, StopPod: s.StopPod, RemovePod: s.RemovePod,
		CreateContainer: s.CreateContainer, StartContainer: s.StartContainer,
		UpdateContainer: s.UpdateContainer, StopContainer: s.StopContainer,
		RemoveContainer: s.RemoveContainer,
	}
}

// Target is the name the step refers to.
func (s *Step) Target() string { return s.targets()[s.Action] }

// Actions returns all actions, in a fixed order.
func Actions() []Action {
	return []Action{RunPod, StopPod, RemovePod, CreateContainer, StartContainer, UpdateContainer, StopContainer, RemoveContainer}
}
