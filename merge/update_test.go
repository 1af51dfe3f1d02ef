package merge_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
)

func TestCreateUpdatesOtherContainers(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	a := &api.CreateContainerResponse{Update: []*api.ContainerUpdate{
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(100); u.AddLinuxHugepageLimit("2M", 1) }),
		update("c2", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(10); u.SetIgnoreFailure() }),
	}}
	b := &api.CreateContainerResponse{Update: []*api.ContainerUpdate{
		update("c2", func(u *api.ContainerUpdate) { u.SetLinuxCPUQuota(5); u.SetIgnoreFailure() }),
		update("c1", func(u *api.ContainerUpdate) {
			u.SetLinuxCPUSetCPUs("0")
			u.AddLinuxUnified("k", "v")
			u.SetLinuxPidLimits(7)
		}),
		update("c3", func(u *api.ContainerUpdate) {}),
	}}
	if err := c.Apply("00-a", a); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("10-b", b); err != nil {
		t.Fatal(err)
	}
	res := func(r *api.LinuxResources) *api.LinuxContainerUpdate { return &api.LinuxContainerUpdate{Resources: r} }
	checkList(t, "updates", c.Updates(), []*api.ContainerUpdate{
		{ContainerId: "c1", Linux: res(&api.LinuxResources{
			Memory:         &api.LinuxMemory{Limit: api.Int64(100)},
			Cpu:            &api.LinuxCPU{Cpus: "0"},
			HugepageLimits: []*api.HugepageLimit{{PageSize: "2M", Limit: 1}},
			Unified:        map[string]string{"k": "v"},
			Pids:           &api.LinuxPids{Limit: 7},
		})},
		{ContainerId: "c2", IgnoreFailure: true, Linux: res(&api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(10), Quota: api.Int64(5)}})},
		{ContainerId: "c3"},
	})
	if owner, _ := c.Owners().CPUQuotaOwner("c2"); owner != "10-b" {
		t.Errorf("CPU quota of c2 owned by %q, want 10-b", owner)
	}
	if owner, _ := c.Owners().MemLimitOwner("c1"); owner != "00-a" {
		t.Errorf("memory limit of c1 owned by %q, want 00-a", owner)
	}
}

func TestCreateUpdateConflicts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(u *api.ContainerUpdate)
		field api.Field
		key   string
	}{
		{"memory limit", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(1) }, api.Field_MemLimit, ""},
		{"swappiness", func(u *api.ContainerUpdate) { u.SetLinuxMemorySwappiness(1) }, api.Field_MemSwappiness, ""},
		{"cpu shares", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(1) }, api.Field_CPUShares, ""},
		{"cpuset mems", func(u *api.ContainerUpdate) { u.SetLinuxCPUSetMems("0") }, api.Field_CPUSetMems, ""},
		{"pids", func(u *api.ContainerUpdate) { u.SetLinuxPidLimits(1) }, api.Field_PidsLimit, ""},
		{"hugepages", func(u *api.ContainerUpdate) { u.AddLinuxHugepageLimit("1G", 1) }, api.Field_HugepageLimits, "1G"},
		{"unified", func(u *api.ContainerUpdate) { u.AddLinuxUnified("memory.max", "1") }, api.Field_CgroupsUnified, "memory.max"},
		{"blockio", func(u *api.ContainerUpdate) { u.SetLinuxBlockIOClass("x") }, api.Field_BlockioClass, ""},
		{"rdt class", func(u *api.ContainerUpdate) { u.SetLinuxRDTClass("x") }, api.Field_RdtClass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := merge.NewCreate(testPod(), testContainer())
			if err := c.Apply("00-a", &api.CreateContainerResponse{Update: []*api.ContainerUpdate{update("c1", tc.build)}}); err != nil {
				t.Fatal(err)
			}
			before := len(c.Updates())
			err := c.Apply("10-b", &api.CreateContainerResponse{Update: []*api.ContainerUpdate{update("c1", tc.build)}})
			checkConflict(t, err, merge.ConflictError{ContainerID: "c1", Field: tc.field, Key: tc.key, Plugins: [2]string{"00-a", "10-b"}})
			if len(c.Updates()) != before {
				t.Errorf("rejected update recorded")
			}

			// The same update marked optional is dropped, not failed.
			optional := update("c1", tc.build)
			optional.SetIgnoreFailure()
			keep := update("c9", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(9) })
			if err := c.Apply("20-c", &api.CreateContainerResponse{Update: []*api.ContainerUpdate{optional, keep}}); err != nil {
				t.Fatalf("optional conflicting update failed the answer: %v", err)
			}
			if n := len(c.Ignored()); n != 1 {
				t.Fatalf("Ignored() has %d entries, want 1", n)
			}
			checkConflict(t, c.Ignored()[0], merge.ConflictError{ContainerID: "c1", Field: tc.field, Key: tc.key, Plugins: [2]string{"00-a", "20-c"}})
			if owner, _ := c.Owners().MemLimitOwner("c9"); owner != "20-c" {
				t.Errorf("rest of the answer not merged: owner of c9 memory limit %q", owner)
			}
			if tc.field != api.Field_MemLimit {
				if _, ok := c.Owners().SimpleOwner("c1", api.Field_MemLimit); ok {
					t.Errorf("dropped update left ownership behind")
				}
			}
		})
	}
}

// Several updates to one container in one answer are merged in order; an
// optional one that conflicts leaves no claims behind.
func TestUpdateOptionalConflictLeavesNoClaims(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	if err := c.Apply("00-a", &api.CreateContainerResponse{Update: []*api.ContainerUpdate{
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(1) }),
	}}); err != nil {
		t.Fatal(err)
	}
	err := c.Apply("10-b", &api.CreateContainerResponse{Update: []*api.ContainerUpdate{
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(2); u.SetLinuxCPUShares(2); u.SetIgnoreFailure() }),
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxCPUQuota(3) }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Owners().MemLimitOwner("c1"); ok {
		t.Errorf("memory limit claimed by a dropped update")
	}
	checkList(t, "updates", c.Updates(), []*api.ContainerUpdate{{ContainerId: "c1", Linux: &api.LinuxContainerUpdate{
		Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(1), Quota: api.Int64(3)}}}}})
}

func TestCreateRefusesUpdateOfCreatedContainer(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	err := c.Apply("00-a", &api.CreateContainerResponse{
		Adjust: &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "E", Value: "1"}}},
		Update: []*api.ContainerUpdate{update("ctr0", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(1) })},
	})
	if !errors.Is(err, merge.ErrUpdateDuringCreation) {
		t.Fatalf("error %v, want ErrUpdateDuringCreation", err)
	}
	want := `plugin "00-a" asked to update container "ctr0": ` + merge.ErrUpdateDuringCreation.Error()
	if err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
	if len(c.Adjustment().Env) != 0 {
		t.Errorf("adjustment of the refused answer merged")
	}
}

func TestIgnoreFailureMerging(t *testing.T) {
	for _, tc := range []struct {
		first, second bool
		want          bool
	}{
		{true, true, true}, {true, false, false}, {false, true, false}, {false, false, false},
	} {
		t.Run(fmt.Sprint(tc.first, tc.second), func(t *testing.T) {
			u := merge.NewUpdates()
			for i, optional := range []bool{tc.first, tc.second} {
				up := update("c1", func(u *api.ContainerUpdate) { u.AddLinuxUnified(fmt.Sprint(i), "v") })
				up.IgnoreFailure = optional
				if err := u.Apply(fmt.Sprintf("%02d-p", i), []*api.ContainerUpdate{up}); err != nil {
					t.Fatal(err)
				}
			}
			if got := u.List()[0].IgnoreFailure; got != tc.want {
				t.Errorf("IgnoreFailure = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvictions(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	if err := c.Apply("00-a", &api.CreateContainerResponse{Evict: []*api.ContainerEviction{
		{ContainerId: "c1", Reason: "first"}, nil, {Reason: "no id"}, {ContainerId: "c2", Reason: "x"},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("10-b", &api.CreateContainerResponse{Evict: []*api.ContainerEviction{
		{ContainerId: "c1", Reason: "second"}, {ContainerId: "c3", Reason: "y"},
	}}); err != nil {
		t.Fatal(err)
	}
	checkList(t, "evictions", c.Evictions(), []*api.ContainerEviction{
		{ContainerId: "c1", Reason: "first"}, {ContainerId: "c2", Reason: "x"}, {ContainerId: "c3", Reason: "y"},
	})

	u := merge.NewUpdate(testPod(), testContainer(), nil)
	if err := u.Apply("00-a", &api.UpdateContainerResponse{Evict: []*api.ContainerEviction{{ContainerId: "c4"}}}); err != nil {
		t.Fatal(err)
	}
	checkList(t, "update evictions", u.Evictions(), []*api.ContainerEviction{{ContainerId: "c4"}})
}

func TestUpdateMerge(t *testing.T) {
	requested := &api.LinuxResources{
		Memory: &api.LinuxMemory{Limit: api.Int64(1000)},
		Cpu:    &api.LinuxCPU{Shares: api.UInt64(100)},
	}
	keep := api.Clone(requested)
	u := merge.NewUpdate(testPod(), testContainer(), requested)
	if err := u.Apply("00-a", &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{
		update("ctr0", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(2000) }),
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(5) }),
	}}); err != nil {
		t.Fatal(err)
	}
	// The next plugin is sent the merged resources.
	checkMessage(t, "resources after 00-a", u.Resources(), &api.LinuxResources{
		Memory: &api.LinuxMemory{Limit: api.Int64(2000)},
		Cpu:    &api.LinuxCPU{Shares: api.UInt64(100)},
	})
	if err := u.Apply("10-b", &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{
		update("ctr0", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(200); u.SetLinuxPidLimits(10) }),
	}}); err != nil {
		t.Fatal(err)
	}
	err := u.Apply("20-c", &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{
		update("ctr0", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(3000) }),
	}})
	checkConflict(t, err, merge.ConflictError{ContainerID: "ctr0", Field: api.Field_MemLimit, Plugins: [2]string{"00-a", "20-c"}})
	err = u.Apply("20-c", &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(6) }),
	}})
	checkConflict(t, err, merge.ConflictError{ContainerID: "c1", Field: api.Field_MemLimit, Plugins: [2]string{"00-a", "20-c"}})

	checkMessage(t, "resources", u.Resources(), &api.LinuxResources{
		Memory: &api.LinuxMemory{Limit: api.Int64(2000)},
		Cpu:    &api.LinuxCPU{Shares: api.UInt64(200)},
		Pids:   &api.LinuxPids{Limit: 10},
	})
	checkList(t, "updates", u.Updates(), []*api.ContainerUpdate{{ContainerId: "c1", Linux: &api.LinuxContainerUpdate{
		Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(5)}}}}})
	checkMessage(t, "caller's resources", requested, keep)
	if u.Container().GetId() != "ctr0" || u.Pod().GetId() != "pod0" {
		t.Errorf("Container/Pod not kept")
	}
	if owner, _ := u.Owners().PidsLimitOwner("ctr0"); owner != "10-b" {
		t.Errorf("pids limit owner %q, want 10-b", owner)
	}
}

func TestUpdatesList(t *testing.T) {
	u := merge.NewUpdates()
	if err := u.Apply("00-a", []*api.ContainerUpdate{
		update("c2", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(1) }),
		nil,
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(2) }),
	}); err != nil {
		t.Fatal(err)
	}
	if err := u.Apply("10-b", []*api.ContainerUpdate{
		update("c1", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(3) }),
	}); err != nil {
		t.Fatal(err)
	}
	err := u.Apply("20-c", []*api.ContainerUpdate{
		update("c3", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(4) }),
		update("c2", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(4) }),
	})
	checkConflict(t, err, merge.ConflictError{ContainerID: "c2", Field: api.Field_MemLimit, Plugins: [2]string{"00-a", "20-c"}})
	lr := func(r *api.LinuxResources) *api.LinuxContainerUpdate { return &api.LinuxContainerUpdate{Resources: r} }
	checkList(t, "list", u.List(), []*api.ContainerUpdate{
		{ContainerId: "c2", Linux: lr(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1)}})},
		{ContainerId: "c1", Linux: lr(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(2)}, Cpu: &api.LinuxCPU{Shares: api.UInt64(3)}})},
	})
	if len(u.Ignored()) != 0 {
		t.Errorf("Ignored: %v", u.Ignored())
	}
	if owner, _ := u.Owners().CPUSharesOwner("c1"); owner != "10-b" {
		t.Errorf("owner %q", owner)
	}
}
