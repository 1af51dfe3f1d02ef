package merge_test

import (
	"errors"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

func checkMessage(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s:\n got: %s\nwant: %s", what, prototext.Format(got), prototext.Format(want))
	}
}

func checkList[M proto.Message](t *testing.T, what string, got, want []M) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d entries, want %d: %v", what, len(got), len(want), got)
		return
	}
	for i := range got {
		checkMessage(t, what, got[i], want[i])
	}
}

// checkConflict checks that err is a *merge.ConflictError with the given
// details.
func checkConflict(t *testing.T, err error, want merge.ConflictError) {
	t.Helper()
	var c *merge.ConflictError
	if !errors.As(err, &c) {
		t.Fatalf("error %v (%T) is not a *ConflictError", err, err)
	}
	if *c != want {
		t.Errorf("conflict = %+v, want %+v", *c, want)
	}
	if err.Error() != want.Error() {
		t.Errorf("error text %q, want %q", err.Error(), want.Error())
	}
}

func testPod() *api.PodSandbox {
	return &api.PodSandbox{Id: "pod0", Name: "pod0", Uid: "uid0", Namespace: "default"}
}

func testContainer() *api.Container {
	return &api.Container{
		Id:           "ctr0",
		PodSandboxId: "pod0",
		Name:         "ctr0",
		Args:         []string{"echo", "original"},
		Env:          []string{"KEEP=1", "ORIG=2"},
		Annotations:  map[string]string{"orig": "a"},
		Mounts:       []*api.Mount{{Destination: "/remove/test/destination", Source: "/remove/test", Type: "bind"}},
		Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{{Type: "cgroup", Path: "/var/run/cgroupns/original"}},
			Devices:    []*api.LinuxDevice{{Path: "/dev/orig", Type: "c", Major: 1, Minor: 1}},
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: api.Int64(11111)},
				Cpu:    &api.LinuxCPU{Shares: api.UInt64(111)},
			},
		},
	}
}

func adjust(build func(a *api.ContainerAdjustment)) *api.CreateContainerResponse {
	a := &api.ContainerAdjustment{}
	build(a)
	return &api.CreateContainerResponse{Adjust: a}
}

func update(id string, build func(u *api.ContainerUpdate)) *api.ContainerUpdate {
	u := &api.ContainerUpdate{ContainerId: id}
	build(u)
	return u
}

func applyAll(t *testing.T, c *merge.Create, answers ...any) error {
	t.Helper()
	for i := 0; i < len(answers); i += 2 {
		if err := c.Apply(answers[i].(string), answers[i+1].(*api.CreateContainerResponse)); err != nil {
			return err
		}
	}
	return nil
}
