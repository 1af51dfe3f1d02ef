package policy

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestCheckAnswer checks a whole answer as a runtime does before it uses
// it: the adjustment, the updates (the event's container with its where,
// another without) and evictions, and nothing of an answer that opts out.
func TestCheckAnswer(t *testing.T) {
	p := mustParse(t, `
grants:
  - plugins: [x]
    where: {namespaces: [gpu-*]}
    adjust: {env: [GPU_*]}
    update: {cpu: {}}
`)
	g := p.GrantFor("10", "x")
	env := func(k string) *api.ContainerAdjustment {
		return &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: k, Value: "1"}}}
	}
	mem := func(id string) *api.ContainerUpdate {
		return &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
			Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}}}}
	}
	outside := &api.PodSandbox{Id: "pod-2", Name: "sys", Namespace: "kube-system"}
	for _, tc := range []struct {
		name string
		pod  *api.PodSandbox
		rsp  any
		want string
	}{
		{"allowed adjustment", testPod, &api.CreateContainerResponse{Adjust: env("GPU_X")}, ""},
		{"refused adjustment", testPod, &api.CreateContainerResponse{Adjust: env("LD_PRELOAD")}, "env"},
		{"refused update of the container", testPod, &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{mem(testCtr.Id)}}, "update.linux.resources.memory"},
		{"update of the container outside where", outside, &api.StopContainerResponse{Update: []*api.ContainerUpdate{{ContainerId: testCtr.Id,
			Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0"}}}}}}, "update.linux.resources.cpu"},
		{"eviction not granted", testPod, &api.UpdateContainerResponse{Evict: []*api.ContainerEviction{{ContainerId: "other"}}}, "evict"},
		{"opts out", testPod, &api.CreateContainerResponse{Adjust: env("LD_PRELOAD"), OptOut: &api.OptOut{ContainerIds: []string{testCtr.Id}}}, ""},
		{"nothing to check", testPod, &api.PostCreateContainerResponse{}, ""},
	} {
		if got := fields(g.CheckAnswer(tc.pod, testCtr, tc.rsp)); got != tc.want {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
	if vs := (*Grant)(nil).CheckAnswer(testPod, testCtr, &api.CreateContainerResponse{Adjust: env("LD_PRELOAD")}); vs != nil {
		t.Errorf("the nil grant refused %v", vs)
	}
	allowed := &api.CreateContainerResponse{Adjust: env("GPU_X")}
	if n := testing.AllocsPerRun(100, func() { g.CheckAnswer(testPod, testCtr, allowed) }); n != 0 {
		t.Errorf("an allowed answer costs %v allocations, want 0", n)
	}
}
