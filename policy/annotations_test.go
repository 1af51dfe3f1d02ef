package policy

import (
	"os"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestRouteReservedAnnotations: annotations the runtimes interpret are
// refused unless the grant names them exactly, whatever its globs, and
// CDI devices requested through annotations meet the cdiDevices rule
// (route "reserved annotations").
func TestRouteReservedAnnotations(t *testing.T) {
	p := mustParse(t, `
grants:
  - plugins: [globs]
    adjust:
      annotations: ["*"]
      cdiDevices: ["nvidia.com/gpu=*"]
  - plugins: [exact]
    adjust:
      annotations: [cdi.k8s.io/nri, org.systemd.property.TimeoutStopUSec]
      cdiDevices: ["nvidia.com/gpu=*"]
  - plugins: [nocdi]
    adjust:
      annotations: [cdi.k8s.io/nri]
`)
	ann := func(k, v string) *api.ContainerAdjustment {
		return &api.ContainerAdjustment{Annotations: map[string]string{k: v}}
	}
	const reserved = "annotations: interpreted by"
	checkCases(t, p.GrantFor("10", "globs"), []ruleCase{
		{"an ordinary key", ann("example.com/a", "1"), ""},
		{"CDI", ann("cdi.k8s.io/nri", "vendor.com/disk=sda"), reserved},
		{"CDI removed", ann("-cdi.k8s.io/nri", ""), reserved},
		{"containerd's CRI", ann("io.kubernetes.cri.sandbox-id", "other"), reserved},
		{"containerd's shim group", ann("io.containerd.runc.v2.group", "other"), reserved},
		{"CRI-O", ann("io.kubernetes.cri-o.Devices", "/dev/sda"), reserved},
		{"CRI-O v2", ann("cpu-load-balancing.crio.io", "disable"), reserved},
		{"CRI-O v2 per container", ann("unified-cgroup.crio.io/main", "memory.max=max"), reserved},
		{"CRI-O seccomp", ann("seccomp-profile.kubernetes.cri-o.io/main", "unconfined"), reserved},
		{"systemd properties", ann("org.systemd.property.DeviceAllow", "'/dev/sda rwm'"), reserved},
		{"runc's criu", ann("org.criu.config", "/tmp/x"), reserved},
		{"crun", ann("run.oci.keep_original_groups", "1"), reserved},
		{"crun wasm", ann("module.wasm.image/variant", "compat"), reserved},
		{"apparmor", ann("container.apparmor.security.beta.kubernetes.io/main", "unconfined"), reserved},
	})
	checkCases(t, p.GrantFor("10", "exact"), []ruleCase{
		{"named CDI key", ann("cdi.k8s.io/nri", "nvidia.com/gpu=0,nvidia.com/gpu=1"), ""},
		{"named CDI key, a device refused", ann("cdi.k8s.io/nri", "nvidia.com/gpu=0,vendor.com/disk=sda"), "cdi_devices: annotation"},
		{"named systemd property", ann("org.systemd.property.TimeoutStopUSec", "uint64 1"), ""},
		{"another systemd property", ann("org.systemd.property.DeviceAllow", "x"), reserved},
		{"another CDI key", ann("cdi.k8s.io/other", "nvidia.com/gpu=0"), reserved},
	})
	checkCases(t, p.GrantFor("10", "nocdi"), []ruleCase{
		{"CDI key without cdiDevices", ann("cdi.k8s.io/nri", "nvidia.com/gpu=0"), "cdi_devices: not granted"},
		{"CDI key removed", ann("-cdi.k8s.io/nri", ""), ""},
	})
}

// TestReservedAnnotationsDocumented checks that docs/policy.md lists
// every family of reserved annotations as the refusals name it.
func TestReservedAnnotationsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "### Reserved annotations")
	table, _, _ = strings.Cut(table, "\n### ")
	for i := range reservedAnnotations {
		for p := range strings.SplitSeq(reservedAnnotations[i].pattern(), ", ") {
			if !strings.Contains(table, "`"+p+"`") {
				t.Errorf("docs/policy.md, Reserved annotations, does not list `%s`", p)
			}
		}
	}
}
