package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// CRI drives containerd's CRI service through crictl.
type CRI struct {
	// Crictl is crictl's path.
	Crictl string
	// Config is crictl's configuration file (endpoints, timeout).
	Config string
}

// CommandError is a crictl (or kubectl) command that failed, with its output.
type CommandError struct {
	// Name is the command (crictl if empty; kubectl for Cluster.Kubectl).
	Name string
	// Args are the command's arguments.
	Args []string
	// Output is what crictl wrote to stderr (and stdout).
	Output string
	// Err is the exec error.
	Err error
}

// Error returns the command, the exit error and the output.
func (e *CommandError) Error() string {
	name := e.Name
	if name == "" {
		name = "crictl"
	}
	return fmt.Sprintf("%s %s: %v: %s", name, strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Output))
}

// Unwrap returns the exec error.
func (e *CommandError) Unwrap() error { return e.Err }

// Run runs crictl with args and returns its stdout; a failure is a
// *CommandError.
func (c *CRI) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Crictl, append([]string{"--config", c.Config}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &CommandError{Args: args, Output: stderr.String() + string(out), Err: err}
	}
	return out, nil
}

// PodConfig is the subset of CRI's PodSandboxConfig the suite uses, in
// the JSON form crictl reads. Pods always use the host network (no CNI)
// and no hostname.
type PodConfig struct {
	Metadata     Metadata          `json:"metadata"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	LogDirectory string            `json:"log_directory,omitempty"`
	Linux        podLinux          `json:"linux"`
}

// Metadata names a pod or a container.
type Metadata struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	UID       string `json:"uid,omitempty"`
	Attempt   uint32 `json:"attempt,omitempty"`
}

type podLinux struct {
	SecurityContext struct {
		NamespaceOptions struct {
			Network int `json:"network"`
		} `json:"namespace_options"`
	} `json:"security_context"`
}

// NewPod returns a host-network pod's configuration in namespace ns.
func NewPod(ns, name string) PodConfig {
	p := PodConfig{Metadata: Metadata{Name: name, Namespace: ns, UID: ns + "-" + name}}
	p.Linux.SecurityContext.NamespaceOptions.Network = 2 // NODE
	return p
}

// ContainerConfig is the subset of CRI's ContainerConfig the suite uses.
type ContainerConfig struct {
	Metadata    Metadata          `json:"metadata"`
	Image       ImageSpec         `json:"image"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Envs        []KeyValue        `json:"envs,omitempty"`
	Mounts      []Mount           `json:"mounts,omitempty"`
	LogPath     string            `json:"log_path,omitempty"`
	Linux       *ContainerLinux   `json:"linux,omitempty"`
}

// Mount is a host path mounted into a container (a Kubernetes hostPath
// volume and its volumeMount).
type Mount struct {
	ContainerPath string `json:"container_path"`
	HostPath      string `json:"host_path"`
	Readonly      bool   `json:"readonly,omitempty"`
}

// ContainerLinux is the subset of CRI's LinuxContainerConfig the suite
// uses: the security context a Kubernetes pod spec maps to.
type ContainerLinux struct {
	SecurityContext ContainerSecurity `json:"security_context"`
}

// ContainerSecurity is CRI's LinuxContainerSecurityContext, in part.
type ContainerSecurity struct {
	RunAsUser      *Int64Value   `json:"run_as_user,omitempty"`
	ReadonlyRootfs bool          `json:"readonly_rootfs,omitempty"`
	Capabilities   *Capabilities `json:"capabilities,omitempty"`
	NoNewPrivs     bool          `json:"no_new_privs,omitempty"`
}

// Int64Value is CRI's wrapper of an optional int64.
type Int64Value struct {
	Value int64 `json:"value"`
}

// Capabilities are the capabilities added to and dropped from a
// container's default set ("ALL" drops every one).
type Capabilities struct {
	AddCapabilities  []string `json:"add_capabilities,omitempty"`
	DropCapabilities []string `json:"drop_capabilities,omitempty"`
}

// ImageSpec names a container's image.
type ImageSpec struct {
	Image string `json:"image"`
}

// KeyValue is an environment variable.
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// NewContainer returns the configuration of a container of the
// workload image.
func NewContainer(name string) ContainerConfig {
	return ContainerConfig{Metadata: Metadata{Name: name}, Image: ImageSpec{Image: WorkloadImage}, LogPath: name + ".log"}
}

// writeJSON writes v to a new file in dir and returns its path.
func writeJSON(dir, pattern string, v any) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return f.Name(), json.NewEncoder(f).Encode(v)
}

func (c *CRI) dir() string { return filepath.Dir(c.Config) }

// RunPod starts a pod and returns its id. The pod's log directory is
// set under the harness's directory unless given.
func (c *CRI) RunPod(ctx context.Context, pod PodConfig) (string, error) {
	if pod.LogDirectory == "" {
		pod.LogDirectory = filepath.Join(c.dir(), "pods", pod.Metadata.Namespace+"_"+pod.Metadata.Name)
	}
	path, err := writeJSON(c.dir(), "pod-*.json", pod)
	if err != nil {
		return "", err
	}
	out, err := c.Run(ctx, "runp", path)
	return strings.TrimSpace(string(out)), err
}

// containerNameLabel is the label the kubelet gives every container, with
// the container's name: CRI-O takes the container's name in NRI from it.
const containerNameLabel = "io.kubernetes.container.name"

// CreateContainer creates a container in the pod podID (started from
// pod) and returns its id. The container gets the kubelet's label with
// its name unless it has one.
func (c *CRI) CreateContainer(ctx context.Context, podID string, pod PodConfig, ctr ContainerConfig) (string, error) {
	if _, ok := ctr.Labels[containerNameLabel]; !ok {
		labels := map[string]string{containerNameLabel: ctr.Metadata.Name}
		for k, v := range ctr.Labels {
			labels[k] = v
		}
		ctr.Labels = labels
	}
	if pod.LogDirectory == "" {
		pod.LogDirectory = filepath.Join(c.dir(), "pods", pod.Metadata.Namespace+"_"+pod.Metadata.Name)
	}
	podPath, err := writeJSON(c.dir(), "pod-*.json", pod)
	if err != nil {
		return "", err
	}
	ctrPath, err := writeJSON(c.dir(), "ctr-*.json", ctr)
	if err != nil {
		return "", err
	}
	out, err := c.Run(ctx, "create", podID, ctrPath, podPath)
	return strings.TrimSpace(string(out)), err
}

// StartContainer starts a created container.
func (c *CRI) StartContainer(ctx context.Context, id string) error {
	_, err := c.Run(ctx, "start", id)
	return err
}

// ContainerInfo is what `crictl inspect` reports about a container
// that the suite checks.
type ContainerInfo struct {
	// State is the CRI state, e.g. CONTAINER_RUNNING.
	State string
	// Pid is the container's first process on the host.
	Pid int
	// Spec is the OCI runtime spec containerd gave runc.
	Spec *specs.Spec
	// Raw is crictl's JSON output.
	Raw []byte
}

// Inspect returns a container's state, pid and OCI spec.
func (c *CRI) Inspect(ctx context.Context, id string) (*ContainerInfo, error) {
	out, err := c.Run(ctx, "inspect", "-o", "json", id)
	if err != nil {
		return nil, err
	}
	var v struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Info struct {
			Pid         int         `json:"pid"`
			RuntimeSpec *specs.Spec `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("crictl inspect %s: %w", id, err)
	}
	if v.Info.RuntimeSpec == nil {
		return nil, fmt.Errorf("crictl inspect %s: no runtimeSpec in %s", id, out)
	}
	return &ContainerInfo{State: v.Status.State, Pid: v.Info.Pid, Spec: v.Info.RuntimeSpec, Raw: out}, nil
}

// Logs returns a container's output, both streams (crictl logs writes
// the container's standard error to its own).
func (c *CRI) Logs(ctx context.Context, id string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Crictl, "--config", c.Config, "logs", id)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", &CommandError{Args: []string{"logs", id}, Output: string(out), Err: err}
	}
	return string(out), nil
}

// RunContainer starts a pod with one container and returns their ids and the
// container's inspection once it runs.
func (c *CRI) RunContainer(ctx context.Context, pod PodConfig, ctr ContainerConfig) (podID, ctrID string, info *ContainerInfo, err error) {
	podID, err = c.RunPod(ctx, pod)
	if err != nil {
		return "", "", nil, err
	}
	ctrID, err = c.CreateContainer(ctx, podID, pod, ctr)
	if err != nil {
		return podID, "", nil, err
	}
	if err := c.StartContainer(ctx, ctrID); err != nil {
		return podID, ctrID, nil, err
	}
	info, err = c.Inspect(ctx, ctrID)
	return podID, ctrID, info, err
}
