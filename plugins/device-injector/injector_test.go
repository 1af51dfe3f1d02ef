package deviceinjector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/allow"
)

func pod(annotations map[string]string) *api.PodSandbox {
	return &api.PodSandbox{Name: "p", Namespace: "ns", Annotations: annotations}
}

// testConfig allows what the tests' annotations ask for.
const testConfig = `
devices:
  - {path: "/dev/nvidia[0-9]*", type: c, major: 195}
  - {path: /dev/null, type: c, major: 1, minor: 3}
mounts:
  - {source: /srv}
cdiDevices: ["vendor.com/gpu=*"]
`

// The host-root attack: the host's root file system mounted read-write,
// and its first disk as a block device.
var attack = map[string]string{
	MountAnnotation + "/container.c":  "- {source: /, destination: /host, type: bind, options: [rbind, rw]}\n",
	DeviceAnnotation + "/container.c": "- {path: /dev/sda, type: b, major: 8, minor: 0}\n",
}

// configured returns the plugin configured with config, logging to log.
func configured(t *testing.T, config string, log *bytes.Buffer) *Plugin {
	t.Helper()
	p := New(slog.New(slog.NewTextHandler(log, nil)))
	if _, err := p.Configure(context.Background(), config, "rt", "1"); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustConfig(t *testing.T, config string) *Config {
	t.Helper()
	c, err := ParseConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestAdjustment(t *testing.T) {
	p := pod(map[string]string{
		DeviceAnnotation + "/container.c": "- {path: /dev/nvidia0, type: c, major: 195, minor: 0, file_mode: 0o666, uid: 1, gid: 2}\n",
		MountAnnotation + "/pod":          "- {source: /srv/./data, destination: /data, type: bind, options: [rbind, ro]}\n",
		CDIDeviceAnnotation:               "- vendor.com/gpu=0\n",
	})
	c := mustConfig(t, testConfig)
	adj, err := c.Adjustment(p, "c")
	if err != nil {
		t.Fatal(err)
	}
	devs := adj.GetLinux().GetDevices()
	if len(devs) != 1 || devs[0].GetPath() != "/dev/nvidia0" || devs[0].GetMajor() != 195 ||
		devs[0].GetFileMode().GetValue() != 0o666 || devs[0].GetUid().GetValue() != 1 || devs[0].GetGid().GetValue() != 2 {
		t.Errorf("devices: %v", devs)
	}
	// The source is injected as it was checked: cleaned.
	if m := adj.GetMounts(); len(m) != 1 || m[0].GetDestination() != "/data" || m[0].GetSource() != "/srv/data" || m[0].GetOptions()[0] != "rbind" {
		t.Errorf("mounts: %v", m)
	}
	if c := adj.GetCDIDevices(); len(c) != 1 || c[0].GetName() != "vendor.com/gpu=0" {
		t.Errorf("CDI devices: %v", c)
	}
	// Another container gets the pod-wide annotations only.
	adj, err = c.Adjustment(p, "other")
	if err != nil || len(adj.GetLinux().GetDevices()) != 0 || len(adj.GetMounts()) != 1 {
		t.Errorf("other container: %v, %v", adj, err)
	}
}

func TestNoAnnotations(t *testing.T) {
	adj, err := mustConfig(t, testConfig).Adjustment(pod(map[string]string{"unrelated": "x"}), "c")
	if adj != nil || err != nil {
		t.Errorf("got %v, %v", adj, err)
	}
	a, u, err := New(slog.New(slog.DiscardHandler)).CreateContainer(context.Background(), pod(nil), &api.Container{Name: "c"})
	if a != nil || u != nil || err != nil {
		t.Errorf("CreateContainer: %v %v %v", a, u, err)
	}
}

func TestLegacyDomain(t *testing.T) {
	adj, err := mustConfig(t, testConfig).Adjustment(pod(map[string]string{"devices.nri.io/container.c": "- {path: /dev/null, type: c, major: 1, minor: 3}"}), "c")
	if err != nil || len(adj.GetLinux().GetDevices()) != 1 {
		t.Errorf("legacy key: %v, %v", adj, err)
	}
	_, err = (&Config{}).Adjustment(pod(map[string]string{"mounts.nri.io/container.c": attack[MountAnnotation+"/container.c"]}), "c")
	if r := (*allow.Refusal)(nil); !errors.As(err, &r) || r.Annotation != "mounts.nri.io/container.c" {
		t.Errorf("legacy key with the attack: %v, want a refusal naming mounts.nri.io/container.c", err)
	}
}

func TestInvalidAnnotations(t *testing.T) {
	many := strings.Repeat("- {path: /dev/null, type: c, major: 1, minor: 3}\n", allow.MaxEntries+1)
	for name, tc := range map[string]struct{ key, value, want string }{
		"yaml":        {DeviceAnnotation, "- [", "annotation devices.noderesource.dev"},
		"unknown key": {DeviceAnnotation, "- {path: /dev/x, type: c, mjor: 1}", "mjor"},
		"type":        {DeviceAnnotation, "- {path: /dev/x, type: z}", `type "z"`},
		"path":        {DeviceAnnotation, "- {path: dev/x, type: c}", "not absolute"},
		"mount":       {MountAnnotation, "- {source: /srv, destination: data, type: bind, options: [ro]}", "not an absolute path"},
		"cdi":         {CDIDeviceAnnotation, "- gpu0", "not a CDI device name"},
		"too many":    {DeviceAnnotation, many, fmt.Sprintf("%d entries, more than the %d allowed", allow.MaxEntries+1, allow.MaxEntries)},
	} {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			_, _, err := configured(t, testConfig, &log).CreateContainer(context.Background(),
				pod(map[string]string{tc.key: tc.value}), &api.Container{Name: "c"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "pod=ns/p") {
				t.Errorf("no warning naming the pod:\n%s", log.String())
			}
		})
	}
}

// TestHostRootAttack: the annotations that would give a pod the host's
// root file system read-write and its disk are refused without a
// configuration and with one that allows GPU devices and a directory:
// the creation fails naming the annotation and the refused entry, and a
// warning names the pod, the annotation and the value.
func TestHostRootAttack(t *testing.T) {
	for name, config := range map[string]string{"no configuration": "", "a configuration": testConfig} {
		for key, value := range attack {
			t.Run(name+"/"+key, func(t *testing.T) {
				var log bytes.Buffer
				p := configured(t, config, &log)
				adj, _, err := p.CreateContainer(context.Background(), pod(map[string]string{key: value}), &api.Container{Name: "c"})
				var r *allow.Refusal
				if adj != nil || !errors.As(err, &r) || r.Annotation != key {
					t.Fatalf("adjustment %v, error %v: want a refusal of %s", adj, err, key)
				}
				want := map[string]string{MountAnnotation + "/container.c": "/ on /host type bind (rbind,rw)", DeviceAnnotation + "/container.c": "/dev/sda b 8:0"}[key]
				if r.Value != want || !strings.Contains(err.Error(), want) {
					t.Errorf("refused value %q (error %v), want %q", r.Value, err, want)
				}
				for _, s := range []string{"level=WARN", "pod=ns/p", "container=c", "annotation=" + key, "value=", want} {
					if !strings.Contains(log.String(), s) {
						t.Errorf("the warning lacks %q:\n%s", s, log.String())
					}
				}
			})
		}
	}
}

// TestNamespaces: the plugin leaves pods outside its namespaces alone,
// whatever they ask; inside, the rules apply.
func TestNamespaces(t *testing.T) {
	var log bytes.Buffer
	p := configured(t, "namespaces: [ml, 'team-*']\n"+testConfig, &log)
	ask := map[string]string{DeviceAnnotation: "- {path: /dev/nvidia0, type: c, major: 195}\n"}
	for ns, want := range map[string]bool{"ml": true, "team-a": true, "default": false, "kube-system": false, "mlx": false} {
		adj, _, err := p.CreateContainer(context.Background(), &api.PodSandbox{Name: "p", Namespace: ns, Annotations: ask}, &api.Container{Name: "c"})
		if err != nil || (adj != nil) != want {
			t.Errorf("namespace %s: adjustment %v, error %v; want one: %v", ns, adj, err, want)
		}
		_, _, err = p.CreateContainer(context.Background(), &api.PodSandbox{Name: "p", Namespace: ns, Annotations: attack}, &api.Container{Name: "c"})
		if (err != nil) != want {
			t.Errorf("namespace %s, the attack: error %v; want a refusal: %v", ns, err, want)
		}
	}
}

// TestConfigure: Configure replaces the rules, and refuses a bad
// configuration keeping the previous one.
func TestConfigure(t *testing.T) {
	var log bytes.Buffer
	p := configured(t, testConfig, &log)
	ask := pod(map[string]string{DeviceAnnotation: "- {path: /dev/nvidia0, type: c, major: 195}\n"})
	if adj, _, err := p.CreateContainer(context.Background(), ask, &api.Container{Name: "c"}); err != nil || adj == nil {
		t.Fatalf("allowed device: %v, %v", adj, err)
	}
	if _, err := p.Configure(context.Background(), "devices: [{path: /dev/x, type: b}]", "rt", "1"); err == nil {
		t.Error("a device rule without major accepted")
	}
	if _, err := p.Configure(context.Background(), "", "rt", "1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.CreateContainer(context.Background(), ask, &api.Container{Name: "c"}); err == nil {
		t.Error("an empty configuration allowed a device")
	}
}
