package adaptation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub"
)

func TestAppliedCapabilities(t *testing.T) {
	containerd, ok := appliedCapabilities("containerd")
	if !ok {
		t.Fatal("containerd is not known")
	}
	crio, ok := appliedCapabilities("cri-o")
	if !ok {
		t.Fatal("cri-o is not known")
	}
	if _, ok := appliedCapabilities("other"); ok {
		t.Error("an unknown runtime declares capabilities")
	}
	for _, c := range []capability.Capability{capability.Env, capability.Mounts, capability.Devices, capability.CDIDevices, capability.Hooks,
		capability.Rlimits, capability.NetDevices, capability.MemoryPolicy, capability.Pids, capability.BlockioClass, capability.RdtClass,
		capability.UpdateMemory, capability.UpdateCPU, capability.UpdateHugepageLimits, capability.UpdateUnified, capability.Evict} {
		if !containerd.Has(c) || !crio.Has(c) {
			t.Errorf("%s: containerd %v, cri-o %v; want both", c, containerd.Has(c), crio.Has(c))
		}
	}
	for _, c := range []capability.Capability{capability.UpdateBlockioClass, capability.UpdateRdtClass} {
		if containerd.Has(c) || crio.Has(c) {
			t.Errorf("%s: containerd %v, cri-o %v; want neither", c, containerd.Has(c), crio.Has(c))
		}
	}
	for _, c := range []capability.Capability{capability.UpdateDeviceCgroup, capability.UpdatePids} {
		if containerd.Has(c) || !crio.Has(c) {
			t.Errorf("%s: containerd %v, cri-o %v; want cri-o only", c, containerd.Has(c), crio.Has(c))
		}
	}
}

// capsPlugin is a plugin that only creates containers.
type capsPlugin struct{}

func (capsPlugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// TestContainerdTellsCapabilities registers plugins with the Adaptation
// containerd makes (named "containerd"): one is told containerd's set,
// one requiring an update of pids limits, which containerd does not
// apply, is refused with that name.
func TestContainerdTellsCapabilities(t *testing.T) {
	dir, err := os.MkdirTemp("", "nri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "nri.sock")
	f := &fakeContainerd{pods: map[string]*PodSandbox{}, ctrs: map[string]*Container{}}
	f.nri, err = New("containerd", "v2.4.2", f.sync, f.update, WithSocketPath(socket), WithPluginPath(filepath.Join(dir, "none")))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nri.Start(); err != nil {
		t.Fatal(err)
	}
	defer f.nri.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	want, _ := appliedCapabilities("containerd")
	s, err := stub.New(capsPlugin{}, stub.WithSocketPath(socket), stub.WithPluginName("told"), stub.WithPluginIdx("10"),
		stub.WithRequiredCapabilities(capability.Env, capability.UpdateCPU))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got, told := s.Capabilities(); !told || got != want {
		t.Errorf("told %v (%v), want %v", got, told, want)
	}

	refused, err := stub.New(capsPlugin{}, stub.WithSocketPath(socket), stub.WithPluginName("refused"), stub.WithPluginIdx("20"),
		stub.WithRequiredCapabilities(capability.Env, capability.UpdatePids))
	if err != nil {
		t.Fatal(err)
	}
	err = refused.Start(ctx)
	defer refused.Stop()
	if err == nil || !strings.Contains(err.Error(), `plugin "20-refused" requires capabilities this runtime does not honour for it: update.linux.resources.pids;`) {
		t.Errorf("registration of a plugin requiring pids updates: %v", err)
	}
}
