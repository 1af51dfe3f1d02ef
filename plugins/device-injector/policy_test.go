package deviceinjector

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/nodepolicy"
	"github.com/nrikit/nrikit/policy"
)

// nodePod is a pod of the overlay's namespace, where the plugin and its
// grant act.
func nodePod(annotations map[string]string) *api.PodSandbox {
	return &api.PodSandbox{Id: "pod-1", Name: "attacker", Namespace: "gpu-workloads", Annotations: annotations}
}

var nodeCtr = &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c"}

// wideOpen allows the plugin every host path read-write and every block
// device of major 8 (SCSI disks), in every namespace: a configuration
// gone wrong, which leaves the node's policy as the only line.
const wideOpen = `
devices: [{path: "/dev/*", type: b, major: 8}]
mounts: [{source: /, readWrite: true}]
`

// TestHostRootAttackShippedPolicy: the host-root attack of issue 25 made
// with the real plugin. Its overlay's configuration refuses it (the first
// line); with its allowlist wide open the plugin makes the adjustment,
// which the grant of the shipped node policy refuses, naming the mount
// and the device (the second, independent line), and which no policy
// allows.
func TestHostRootAttackShippedPolicy(t *testing.T) {
	var log bytes.Buffer
	pod := nodePod(attack)
	deployed := configured(t, nodepolicy.OverlayConfig(t, Name), &log)
	if adj, _, err := deployed.CreateContainer(context.Background(), pod, nodeCtr); err == nil || adj != nil {
		t.Errorf("the overlay's configuration let the attack through: %v, %v", adj, err)
	}

	adj, _, err := configured(t, wideOpen, &log).CreateContainer(context.Background(), pod, nodeCtr)
	if err != nil {
		t.Fatalf("the wide-open plugin refused the attack: %v", err)
	}
	m, d := adj.GetMounts(), adj.GetLinux().GetDevices()
	if len(m) != 1 || m[0].Source != "/" || m[0].Destination != "/host" || m[0].Type != "bind" || !slices.Equal(m[0].Options, []string{"rbind", "rw"}) ||
		len(d) != 1 || d[0].Path != "/dev/sda" || d[0].Type != "b" || d[0].Major != 8 || d[0].Minor != 0 {
		t.Fatalf("the plugin's adjustment is not the attack: %v", adj)
	}

	vs := nodepolicy.Load(t).GrantFor("20", Name).CheckAdjustment(pod, nodeCtr, adj)
	want := []string{
		`mounts "{source: /, destination: /host, type: bind, options: [rbind, rw]}" denied: source "/" is not under an allowed source (/etc/nri/policy.yaml:16: grants[0].adjust.mounts)`,
		`linux.devices "/dev/sda b 8:0" denied: no device rule allows this path, type and number (/etc/nri/policy.yaml:13: grants[0].adjust.devices)`,
	}
	if len(vs) != len(want) {
		t.Fatalf("the shipped grant's violations: %v, want %d", vs, len(want))
	}
	for i, v := range vs {
		if v.String() != want[i] {
			t.Errorf("violation %d:\n%s\nwant\n%s", i, v, want[i])
		}
	}
	denied := policy.Deny("20-"+Name, pod, nodeCtr, vs)
	if denied == nil {
		t.Fatal("no error")
	}
	t.Logf("the runtime's error: %v", denied)

	var none *policy.Policy
	if vs := none.GrantFor("20", Name).CheckAdjustment(pod, nodeCtr, adj); vs != nil {
		t.Errorf("without a policy the attack is refused: %v", vs)
	}
}

// TestShippedGrantAllowsDeployedPlugin: what the plugin, configured as its
// overlay, injects for a GPU pod (the devices, a model directory and a
// CDI device) passes its grant in the shipped node policy.
func TestShippedGrantAllowsDeployedPlugin(t *testing.T) {
	var log bytes.Buffer
	pod := nodePod(map[string]string{
		DeviceAnnotation + "/container.c": "- {path: /dev/nvidia0, type: c, major: 195, minor: 0, file_mode: 0o666}\n" +
			"- {path: /dev/nvidiactl, type: c, major: 195, minor: 255}\n",
		MountAnnotation + "/pod":     "- {source: /srv/models/llama, destination: /models, type: bind, options: [rbind, ro, nosuid]}\n",
		CDIDeviceAnnotation + "/pod": "- nvidia.com/gpu=0\n",
	})
	adj, _, err := configured(t, nodepolicy.OverlayConfig(t, Name), &log).CreateContainer(context.Background(), pod, nodeCtr)
	if err != nil || len(adj.GetLinux().GetDevices()) != 2 || len(adj.GetMounts()) != 1 || len(adj.GetCDIDevices()) != 1 {
		t.Fatalf("the deployed plugin's adjustment: %v, %v", adj, err)
	}
	if vs := nodepolicy.Load(t).GrantFor("20", Name).CheckAdjustment(pod, nodeCtr, adj); vs != nil {
		t.Errorf("the shipped grant refuses what the deployed plugin is for: %v", vs)
	}
}

// TestShippedGrantRepeatsOverlay: the grant of the shipped node policy
// allows what the overlay's configuration allows, rule for rule: its
// namespaces, device rules, read-only mount sources and CDI names.
func TestShippedGrantRepeatsOverlay(t *testing.T) {
	cfg, err := ParseConfig(nodepolicy.OverlayConfig(t, Name))
	if err != nil {
		t.Fatal(err)
	}
	g := nodepolicy.Grant(t, Name)
	if g.Where == nil || !slices.Equal(g.Where.Namespaces, cfg.Namespaces) || len(cfg.Namespaces) == 0 {
		t.Errorf("where %+v, the overlay's namespaces %v", g.Where, cfg.Namespaces)
	}
	a := g.Adjust
	if a == nil || a.Mounts == nil {
		t.Fatalf("the grant allows no mounts: %+v", a)
	}
	var devices, rules []string
	for _, d := range a.Devices {
		devices = append(devices, fmt.Sprint(d.Path, d.Type, deref(d.Major), deref(d.Minor)))
	}
	for _, r := range cfg.Devices {
		rules = append(rules, fmt.Sprint(r.Path, r.Type, deref(r.Major), deref(r.Minor)))
	}
	if !slices.Equal(devices, rules) {
		t.Errorf("devices: the grant's %v, the overlay's %v", devices, rules)
	}
	var sources, mounts []string
	for _, s := range a.Mounts.Sources {
		sources = append(sources, fmt.Sprint(s.Path, s.ReadWrite))
	}
	for _, m := range cfg.Mounts {
		mounts = append(mounts, fmt.Sprint(m.Source, m.ReadWrite))
	}
	if !slices.Equal(sources, mounts) || len(a.Mounts.Types) != 0 || a.Mounts.Options != nil {
		t.Errorf("mounts: the grant's %+v, the overlay's %v", a.Mounts, mounts)
	}
	if !slices.Equal(a.CDIDevices, cfg.CDIDevices) {
		t.Errorf("CDI devices: the grant's %v, the overlay's %v", a.CDIDevices, cfg.CDIDevices)
	}
}

func deref(p *int64) string {
	if p == nil {
		return "any"
	}
	return fmt.Sprint(*p)
}
