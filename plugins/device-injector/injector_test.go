package deviceinjector

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func pod(annotations map[string]string) *api.PodSandbox {
	return &api.PodSandbox{Name: "p", Namespace: "ns", Annotations: annotations}
}

func TestAdjustment(t *testing.T) {
	p := pod(map[string]string{
		DeviceAnnotation + "/container.c": "- {path: /dev/nvidia0, type: c, major: 195, minor: 0, file_mode: 0o666, uid: 1, gid: 2}\n",
		MountAnnotation + "/pod":          "- {source: /srv, destination: /data, type: bind, options: [rbind]}\n",
		CDIDeviceAnnotation:               "- vendor.com/gpu=0\n",
	})
	adj, err := Adjustment(p, "c")
	if err != nil {
		t.Fatal(err)
	}
	devs := adj.GetLinux().GetDevices()
	if len(devs) != 1 || devs[0].GetPath() != "/dev/nvidia0" || devs[0].GetMajor() != 195 ||
		devs[0].GetFileMode().GetValue() != 0o666 || devs[0].GetUid().GetValue() != 1 || devs[0].GetGid().GetValue() != 2 {
		t.Errorf("devices: %v", devs)
	}
	if m := adj.GetMounts(); len(m) != 1 || m[0].GetDestination() != "/data" || m[0].GetOptions()[0] != "rbind" {
		t.Errorf("mounts: %v", m)
	}
	if c := adj.GetCDIDevices(); len(c) != 1 || c[0].GetName() != "vendor.com/gpu=0" {
		t.Errorf("CDI devices: %v", c)
	}
	// Another container gets the pod-wide annotations only.
	adj, err = Adjustment(p, "other")
	if err != nil || len(adj.GetLinux().GetDevices()) != 0 || len(adj.GetMounts()) != 1 {
		t.Errorf("other container: %v, %v", adj, err)
	}
}

func TestNoAnnotations(t *testing.T) {
	adj, err := Adjustment(pod(map[string]string{"unrelated": "x"}), "c")
	if adj != nil || err != nil {
		t.Errorf("got %v, %v", adj, err)
	}
	a, u, err := New(slog.New(slog.DiscardHandler)).CreateContainer(context.Background(), pod(nil), &api.Container{Name: "c"})
	if a != nil || u != nil || err != nil {
		t.Errorf("CreateContainer: %v %v %v", a, u, err)
	}
}

func TestLegacyDomain(t *testing.T) {
	adj, err := Adjustment(pod(map[string]string{"devices.nri.io/container.c": "- {path: /dev/null, type: c, major: 1, minor: 3}"}), "c")
	if err != nil || len(adj.GetLinux().GetDevices()) != 1 {
		t.Errorf("legacy key: %v, %v", adj, err)
	}
}

func TestInvalidAnnotations(t *testing.T) {
	for name, tc := range map[string]struct{ key, value, want string }{
		"yaml":        {DeviceAnnotation, "- [", "annotation devices.noderesource.dev"},
		"unknown key": {DeviceAnnotation, "- {path: /dev/x, type: c, mjor: 1}", "mjor"},
		"type":        {DeviceAnnotation, "- {path: /dev/x, type: z}", `type "z"`},
		"path":        {DeviceAnnotation, "- {path: dev/x, type: c}", "not absolute"},
		"mount":       {MountAnnotation, "- {source: /a, destination: data}", "not an absolute path"},
		"cdi":         {CDIDeviceAnnotation, "- gpu0", "not a CDI device name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := New(slog.New(slog.DiscardHandler)).CreateContainer(context.Background(),
				pod(map[string]string{tc.key: tc.value}), &api.Container{Name: "c"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
