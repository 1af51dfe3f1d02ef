package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CRIContainer is a container's configuration in the JSON form of CRI's
// ContainerConfig that `crictl create` reads: what the kubelet would ask
// the runtime for, for the DaemonSet's plugin container (the subset the
// plugin manifests use).
type CRIContainer struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Image struct {
		Image string `json:"image"`
	} `json:"image"`
	Command []string      `json:"command,omitempty"`
	Args    []string      `json:"args,omitempty"`
	Envs    []CRIKeyValue `json:"envs,omitempty"`
	Mounts  []CRIMount    `json:"mounts,omitempty"`
	Linux   struct {
		SecurityContext struct {
			RunAsUser      *CRIInt64        `json:"run_as_user,omitempty"`
			ReadonlyRootfs bool             `json:"readonly_rootfs,omitempty"`
			NoNewPrivs     bool             `json:"no_new_privs,omitempty"`
			Capabilities   *CRICapabilities `json:"capabilities,omitempty"`
		} `json:"security_context"`
	} `json:"linux"`
}

// CRIKeyValue is an environment variable of a CRIContainer.
type CRIKeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// CRIInt64 is CRI's wrapper of an optional int64.
type CRIInt64 struct {
	Value int64 `json:"value"`
}

// CRICapabilities are the capabilities added to and dropped from a
// CRIContainer's default set.
type CRICapabilities struct {
	AddCapabilities  []string `json:"add_capabilities,omitempty"`
	DropCapabilities []string `json:"drop_capabilities,omitempty"`
}

// CRIMount is a host path mounted into a CRIContainer.
type CRIMount struct {
	ContainerPath string `json:"container_path"`
	HostPath      string `json:"host_path"`
	Readonly      bool   `json:"readonly,omitempty"`
}

// ToCRI translates the first container of the first DaemonSet of r into
// the CRI configuration the kubelet would send: $(VAR) references
// expanded, the environment resolved, hostPath volumes mounted, ConfigMap
// volumes written as files under volumeDir/NAME (as the kubelet does in
// the pod's directory) and mounted, and the security context. Capability
// names lose their CAP_ prefix as in Kubernetes. Other volume types are an
// error.
func (r *Rendered) ToCRI(volumeDir string) (*CRIContainer, error) {
	if len(r.DaemonSets) == 0 || len(r.DaemonSets[0].Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("no DaemonSet container")
	}
	pod := &r.DaemonSets[0].Spec.Template.Spec
	c := &pod.Containers[0]
	env, err := r.Env(c)
	if err != nil {
		return nil, err
	}
	out := &CRIContainer{}
	out.Metadata.Name = c.Name
	out.Image.Image = c.Image
	if out.Command, err = ExpandArgs(c.Command, env); err != nil {
		return nil, err
	}
	if out.Args, err = ExpandArgs(c.Args, env); err != nil {
		return nil, err
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out.Envs = append(out.Envs, CRIKeyValue{Key: k, Value: v})
	}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			return nil, fmt.Errorf("volume mount %s: no volume %q", m.MountPath, m.Name)
		}
		host, err := r.volumePath(&pod.Volumes[i], volumeDir)
		if err != nil {
			return nil, err
		}
		out.Mounts = append(out.Mounts, CRIMount{ContainerPath: m.MountPath, HostPath: host, Readonly: m.ReadOnly})
	}
	if sc := c.SecurityContext; sc != nil {
		s := &out.Linux.SecurityContext
		if sc.RunAsUser != nil {
			s.RunAsUser = &CRIInt64{Value: *sc.RunAsUser}
		}
		s.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		s.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
		if caps := sc.Capabilities; caps != nil {
			s.Capabilities = &CRICapabilities{DropCapabilities: capNames(caps.Drop), AddCapabilities: capNames(caps.Add)}
		}
	}
	return out, nil
}

// volumePath returns the host path of a volume, writing a ConfigMap's
// files under dir.
func (r *Rendered) volumePath(v *corev1.Volume, dir string) (string, error) {
	switch {
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	case v.ConfigMap != nil:
		cm := r.ConfigMaps[v.ConfigMap.Name]
		if cm == nil {
			return "", fmt.Errorf("volume %s: no ConfigMap %s", v.Name, v.ConfigMap.Name)
		}
		if dir == "" {
			return "", fmt.Errorf("volume %s: ConfigMap volumes need a directory for their files", v.Name)
		}
		path := filepath.Join(dir, v.Name)
		if err := os.MkdirAll(path, 0o755); err != nil {
			return "", err
		}
		for key, data := range cm.Data {
			if err := os.WriteFile(filepath.Join(path, key), []byte(data), 0o644); err != nil {
				return "", err
			}
		}
		return path, nil
	}
	return "", fmt.Errorf("volume %s: only hostPath and configMap volumes are translated", v.Name)
}

func capNames(caps []corev1.Capability) []string {
	var out []string
	for _, c := range caps {
		out = append(out, strings.TrimPrefix(string(c), "CAP_"))
	}
	return out
}
