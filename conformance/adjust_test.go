package conformance

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestCheckAdjustment(t *testing.T) {
	known := map[string]bool{"c1": true}
	res := newWorld().containers[1].GetLinux().GetResources()
	tests := []struct {
		name      string
		resp      *api.CreateContainerResponse
		malformed string // substring of the malformed findings, "" for none
		conflict  string // substring of the conflicts, "" for none
	}{
		{name: "empty", resp: &api.CreateContainerResponse{}},
		{name: "remove then set is a takeover", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Env:    []*api.KeyValue{{Key: "-A"}, {Key: "A", Value: "1"}},
			Mounts: []*api.Mount{{Destination: "-/data"}, {Destination: "/data", Source: "/x", Type: "bind"}},
		}}},
		{name: "same value twice", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Env: []*api.KeyValue{{Key: "A", Value: "1"}, {Key: "A", Value: "1"}},
		}}},
		{name: "bare removal marker", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Env: []*api.KeyValue{{Key: "-"}},
		}}, malformed: `env removal marker "-" names nothing`},
		{name: "removal with value", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Env: []*api.KeyValue{{Key: "-A", Value: "x"}},
		}}, malformed: "carries a value"},
		{name: "relative mount", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Mounts: []*api.Mount{{Destination: "data"}},
		}}, malformed: "not an absolute path"},
		{name: "mount removal with source", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Mounts: []*api.Mount{{Destination: "-/data", Source: "/x"}},
		}}, malformed: "mount removal marker"},
		{name: "conflicting mounts", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Mounts: []*api.Mount{{Destination: "/d", Source: "/a"}, {Destination: "/d", Source: "/b"}},
		}}, conflict: `mount "/d" set twice`},
		{name: "unknown namespace", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-netwrk"}}},
		}}, malformed: `unknown namespace type "-netwrk"`},
		{name: "device type", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/x", Type: "z"}}},
		}}, malformed: "invalid type"},
		{name: "rdt removal with settings", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Linux: &api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true, ClosId: &api.OptionalString{Value: "gold"}}},
		}}, malformed: "RDT removal marker"},
		{name: "rlimit soft above hard", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 10, Hard: 5}},
		}}, malformed: "soft limit 10 above hard limit 5"},
		{name: "CDI name", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			CDIDevices: []*api.CDIDevice{{Name: "gpu0"}},
		}}, malformed: "not a qualified name"},
		{name: "hook without path", resp: &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Hooks: &api.Hooks{Poststop: []*api.Hook{{Args: []string{"x"}}}},
		}}, malformed: "OCI hook without a path"},
		{name: "update of unknown container", resp: &api.CreateContainerResponse{
			Update: []*api.ContainerUpdate{{ContainerId: "c9", Linux: &api.LinuxContainerUpdate{Resources: res}}},
		}, malformed: `unknown container "c9"`},
		{name: "update without resources", resp: &api.CreateContainerResponse{
			Update: []*api.ContainerUpdate{{ContainerId: "c1"}},
		}, malformed: "carries no resources"},
		{name: "two different updates", resp: &api.CreateContainerResponse{
			Update: []*api.ContainerUpdate{
				{ContainerId: "c1", Linux: &api.LinuxContainerUpdate{Resources: res}},
				{ContainerId: "c1", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{}}},
			},
		}, conflict: `update of container "c1" set twice`},
		{name: "eviction of unknown container", resp: &api.CreateContainerResponse{
			Evict: []*api.ContainerEviction{{ContainerId: "c9"}},
		}, malformed: `eviction names unknown container "c9"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f findings
			checkAnswer(&f, api.Event_CREATE_CONTAINER, tc.resp, known)
			check := func(what string, got []string, want string) {
				joined := strings.Join(got, "; ")
				switch {
				case want == "" && len(got) > 0:
					t.Errorf("unexpected %s: %s", what, joined)
				case want != "" && !strings.Contains(joined, want):
					t.Errorf("%s %q do not mention %q", what, joined, want)
				}
			}
			check("malformed findings", f.malformed, tc.malformed)
			check("conflicts", f.conflicts, tc.conflict)
		})
	}
}
