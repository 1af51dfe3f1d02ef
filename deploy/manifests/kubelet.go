package manifests

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Rendered is one overlay's output, decoded strictly.
type Rendered struct {
	// DaemonSets are the overlay's DaemonSets, in output order.
	DaemonSets []*appsv1.DaemonSet
	// ConfigMaps are the overlay's ConfigMaps by name.
	ConfigMaps map[string]*corev1.ConfigMap
	// NetworkPolicies are the overlay's network policies, in output
	// order.
	NetworkPolicies []*networkingv1.NetworkPolicy
}

// Render runs kustomize on the overlay directory dir and decodes every
// object strictly (DecodeStrict). Objects of other kinds than DaemonSet,
// ConfigMap and NetworkPolicy are an error: their checks would be
// missing.
func Render(dir string) (*Rendered, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out := &Rendered{ConfigMaps: map[string]*corev1.ConfigMap{}}
	for _, r := range m.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", dir, r.CurId(), err)
		}
		switch kind := r.GetKind(); kind {
		case "DaemonSet":
			var ds appsv1.DaemonSet
			if err := DecodeStrict(doc, &ds); err != nil {
				return nil, fmt.Errorf("%s: DaemonSet %s: %w", dir, r.GetName(), err)
			}
			out.DaemonSets = append(out.DaemonSets, &ds)
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := DecodeStrict(doc, &cm); err != nil {
				return nil, fmt.Errorf("%s: ConfigMap %s: %w", dir, r.GetName(), err)
			}
			out.ConfigMaps[cm.Name] = &cm
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			if err := DecodeStrict(doc, &np); err != nil {
				return nil, fmt.Errorf("%s: NetworkPolicy %s: %w", dir, r.GetName(), err)
			}
			out.NetworkPolicies = append(out.NetworkPolicies, &np)
		default:
			return nil, fmt.Errorf("%s: unexpected %s %s (add its decoding and checks)", dir, kind, r.GetName())
		}
	}
	return out, nil
}

// DecodeStrict decodes a YAML document into v, failing on fields that v's
// type does not have and on duplicate fields.
func DecodeStrict(doc []byte, v any) error {
	return yaml.UnmarshalStrict(doc, v)
}

// Env returns container c's environment as the kubelet sets it, as
// NAME=VALUE: literal values, ConfigMap keys of r, resource limits (in
// bytes or cores), and the node's name (spec.nodeName: this machine's
// host name, the node the container would run on).
func (r *Rendered) Env(c *corev1.Container) ([]string, error) {
	var env []string
	for _, e := range c.Env {
		v := e.Value
		switch from := e.ValueFrom; {
		case from == nil:
		case from.ConfigMapKeyRef != nil:
			cm := r.ConfigMaps[from.ConfigMapKeyRef.Name]
			if cm == nil {
				return nil, fmt.Errorf("env %s: no ConfigMap %s", e.Name, from.ConfigMapKeyRef.Name)
			}
			var ok bool
			if v, ok = cm.Data[from.ConfigMapKeyRef.Key]; !ok {
				return nil, fmt.Errorf("env %s: ConfigMap %s has no key %q", e.Name, cm.Name, from.ConfigMapKeyRef.Key)
			}
		case from.ResourceFieldRef != nil:
			res := from.ResourceFieldRef.Resource
			q, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(res, "limits."))]
			if !strings.HasPrefix(res, "limits.") || !ok {
				return nil, fmt.Errorf("env %s: resource field %s is not a limit the container has", e.Name, res)
			}
			v = strconv.FormatInt(q.Value(), 10)
		case from.FieldRef != nil && from.FieldRef.FieldPath == "spec.nodeName":
			host, err := os.Hostname()
			if err != nil {
				return nil, fmt.Errorf("env %s: the node's name: %w", e.Name, err)
			}
			v = host
		default:
			return nil, fmt.Errorf("env %s: unsupported source %+v", e.Name, from)
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

// envRef is a $(VAR) reference in a container's command or arguments.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// ExpandArgs replaces $(VAR) references in args with values from env
// (NAME=VALUE) as the kubelet does; a reference to a missing variable is
// an error (the kubelet would leave it as is, which no plugin wants).
func ExpandArgs(args, env []string) ([]string, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	out := make([]string, len(args))
	for i, a := range args {
		var missing error
		out[i] = envRef.ReplaceAllStringFunc(a, func(m string) string {
			v, ok := vars[envRef.FindStringSubmatch(m)[1]]
			if !ok {
				missing = fmt.Errorf("argument %q: %s is not in the environment", a, m)
			}
			return v
		})
		if missing != nil {
			return nil, missing
		}
	}
	return out, nil
}
