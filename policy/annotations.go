package policy

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// The rules of adjust.annotations. Most annotations are data, but some
// keys are read by the runtime, its shim or the OCI runtime from the
// container's spec and change how the container is made: a CDI device
// request, the shim a container joins, systemd unit properties, the
// OCI runtime's own switches. A key of those families is allowed only if
// the grant names it exactly, whatever its globs say, and a CDI request
// through an annotation meets the cdiDevices rule.

// cdiAnnotationPrefix is the prefix of CDI's device request annotations,
// whose value is a comma-separated list of fully-qualified device names.
const cdiAnnotationPrefix = "cdi.k8s.io/"

// reservedForm is how a reserved family matches keys.
type reservedForm uint8

const (
	reservedPrefix reservedForm = iota // keys starting with key
	reservedExact                      // the key itself
	reservedDomain                     // keys whose part before the first "/" is key or ends with "."+key
)

// reservedAnnotation is a family of annotation keys a runtime interprets.
type reservedAnnotation struct {
	key  string
	form reservedForm
	// who reads it, for refusals.
	who string
}

// reservedAnnotations are the annotation keys the runtimes interpret,
// found in their sources (containerd v2.4.2, CRI-O v1.36.3, runc v1.3.0,
// and the lists of runc's and crun's that CRI-O keeps,
// pkg/annotations/v2): docs/policy.md lists them with where each is read.
var reservedAnnotations = []reservedAnnotation{
	{cdiAnnotationPrefix, reservedPrefix, "the runtimes, as CDI device requests"},
	{"io.kubernetes.cri.", reservedPrefix, "containerd's CRI, its runc shim and crun"},
	{"io.containerd.", reservedPrefix, "containerd and its shims"},
	{"io.kubernetes.cri-o.", reservedPrefix, "CRI-O"},
	{"crio.io", reservedDomain, "CRI-O"},
	{"cri-o.io", reservedDomain, "CRI-O"},
	{"io.containers.trace-syscall", reservedExact, "CRI-O's OCI seccomp BPF hook"},
	{"org.opencontainers.image.stopSignal", reservedExact, "CRI-O"},
	{"org.systemd.property.", reservedPrefix, "runc and crun, as systemd unit properties"},
	{"org.criu.config", reservedExact, "runc"},
	{"bundle", reservedExact, "runc"},
	{"run.oci.", reservedPrefix, "crun"},
	{"module.wasm.image/variant", reservedExact, "crun"},
	{"io.katacontainers.", reservedPrefix, "Kata Containers"},
	{"dev.gvisor.", reservedPrefix, "gVisor"},
	{"seccomp.security.alpha.kubernetes.io/", reservedPrefix, "runtimes, as a seccomp profile"},
	{"container.seccomp.security.alpha.kubernetes.io/", reservedPrefix, "runtimes, as a seccomp profile"},
	{"container.apparmor.security.beta.kubernetes.io/", reservedPrefix, "runtimes, as an AppArmor profile"},
}

// reservedBy returns the family of reserved annotations key belongs to,
// or nil.
func reservedBy(key string) *reservedAnnotation {
	for i := range reservedAnnotations {
		r := &reservedAnnotations[i]
		switch r.form {
		case reservedPrefix:
			if strings.HasPrefix(key, r.key) {
				return r
			}
		case reservedExact:
			if key == r.key {
				return r
			}
		case reservedDomain:
			part, _, _ := strings.Cut(key, "/")
			if part == r.key || (strings.HasSuffix(part, r.key) && strings.HasSuffix(part[:len(part)-len(r.key)], ".")) {
				return r
			}
		}
	}
	return nil
}

// pattern renders the family as docs/policy.md writes it.
func (r *reservedAnnotation) pattern() string {
	switch r.form {
	case reservedPrefix:
		return r.key + "*"
	case reservedDomain:
		return "*." + r.key + ", *." + r.key + "/*"
	}
	return r.key
}

// annotationRules are the compiled rules of adjust.annotations.
type annotationRules struct {
	globs globList
	// named are the keys the grant writes without a glob character: the
	// only ones that allow a reserved key.
	named map[string]bool
}

// annotations compiles adjust.annotations.
func (c *compiler) annotations(path []any, patterns []string) annotationRules {
	r := annotationRules{globs: c.globs(path, patterns), named: map[string]bool{}}
	for _, p := range patterns {
		if !strings.ContainsAny(p, `*?[\`) {
			r.named[p] = true
		}
	}
	return r
}

// checkAnnotations checks the annotations an adjustment sets or removes.
func (g *Grant) checkAnnotations(vs []Violation, annotations map[string]string) []Violation {
	r := &g.adjust.annotations
	for k, v := range annotations {
		key, removed := api.IsMarkedForRemoval(k)
		reason := ""
		switch res := reservedBy(key); {
		case !g.caps.Has(capability.Annotations):
			reason = notGranted
		case res != nil && !r.named[key]:
			reason = fmt.Sprintf("key interpreted by %s (%s): allowed only if the grant names it exactly", res.who, res.pattern())
		case !r.globs.match(key):
			reason = "key not allowed"
		}
		if reason != "" {
			vs = g.deny(vs, capability.Annotations, quote(k), reason)
			continue
		}
		if !removed && strings.HasPrefix(key, cdiAnnotationPrefix) {
			vs = g.checkCDIAnnotation(vs, key, v)
		}
	}
	return vs
}

// checkCDIAnnotation checks the CDI devices a CDI annotation requests (a
// comma-separated list of names) against the cdiDevices rule.
func (g *Grant) checkCDIAnnotation(vs []Violation, key, value string) []Violation {
	for rest := value; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, ",")
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !g.caps.Has(capability.CDIDevices) || !g.adjust.cdi.match(name) {
			vs = g.deny(vs, capability.CDIDevices, quote(name),
				fmt.Sprintf("%s (requested through annotation %s)", g.reason(capability.CDIDevices, "name not allowed"), quote(key)))
		}
	}
	return vs
}
