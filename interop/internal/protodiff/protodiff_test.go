package protodiff

import (
	"strings"
	"testing"

	uapi "github.com/containerd/nri/pkg/api"

	"github.com/nrikit/nrikit/api"
)

func TestNormalizeKeepsWrappers(t *testing.T) {
	a := &api.ContainerAdjustment{Hooks: &api.Hooks{}, Linux: &api.LinuxContainerAdjustment{
		Resources:   &api.LinuxResources{Memory: &api.LinuxMemory{}},
		OomScoreAdj: &api.OptionalInt{Value: 0},
	}}
	n := Normalize(a)
	if n.Hooks != nil || n.Linux.Resources != nil {
		t.Errorf("empty messages kept: %v", n)
	}
	if n.Linux.OomScoreAdj == nil {
		t.Errorf("empty Optional wrapper dropped: %v", n)
	}
}

func TestDiffReportsFields(t *testing.T) {
	want := &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A", Value: "1"}}, Annotations: map[string]string{"k": "v"}}
	got := &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A", Value: "2"}, {Key: "B"}}}
	d := strings.Join(Diff(want, got), "\n")
	for _, frag := range []string{`env[0].value: want "1", got "2"`, "env[1]: want <missing>", `annotations["k"]: want "v", got <missing>`} {
		if !strings.Contains(d, frag) {
			t.Errorf("diff lacks %q:\n%s", frag, d)
		}
	}
	if d := Diff(want, want); len(d) != 0 {
		t.Errorf("equal messages differ: %v", d)
	}
}

func TestConvertRoundTrip(t *testing.T) {
	in := &api.ContainerUpdate{ContainerId: "c", IgnoreFailure: true}
	u, err := Convert(in, &uapi.ContainerUpdate{})
	if err != nil || u.ContainerId != "c" || !u.IgnoreFailure {
		t.Fatalf("Convert: %v, %v", u, err)
	}
	back, err := Convert(u, &api.ContainerUpdate{})
	if err != nil || len(Diff(in, back)) != 0 {
		t.Fatalf("round trip: %v, %v", back, err)
	}
}
