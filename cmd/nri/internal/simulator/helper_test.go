package simulator

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
)

// helperEnv makes the test binary a plugin process (it is set in the
// test's environment, which the runtime's plugins inherit).
const helperEnv = "NRIKIT_SIMULATOR_HELPER"

// helperSharesEnv sets the CPU shares plugin "two" answers UpdateContainer
// with.
const helperSharesEnv = "NRIKIT_SIMULATOR_HELPER_SHARES"

// helperPlugin is the plugin the test binary runs as a helper process. It
// sets HELPER_<NAME>=1 in every container (and SHARED=<name> in mode
// "conflict"); plugin "two" answers UpdateContainer by setting the CPU
// shares to 777, and in mode "hang" never answers CreateContainer.
type helperPlugin struct {
	name, mode string
}

func (h *helperPlugin) CreateContainer(ctx context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if h.mode == "hang" && h.name == "two" {
		<-ctx.Done() // the runtime gives up, and drops the connection
		return nil, nil, ctx.Err()
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("HELPER_"+h.name, "1")
	if h.mode == "conflict" {
		adj.AddEnv("SHARED", h.name)
	}
	return adj, nil, nil
}

func (h *helperPlugin) UpdateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	if h.name != "two" {
		return nil, nil
	}
	// helperSharesEnv, if set, replaces 777 (a replay's new build).
	shares := uint64(777)
	if v, err := strconv.ParseUint(os.Getenv(helperSharesEnv), 10, 64); err == nil {
		shares = v
	}
	u := &api.ContainerUpdate{}
	u.SetContainerId(c.GetId())
	u.SetLinuxCPUShares(shares)
	return []*api.ContainerUpdate{u}, nil
}

// TestHelperProcess is not a test: it is the plugin process the
// simulator's tests launch, in mode "env" or "conflict"
// (runtimetest.HelperMain).
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{
		"env":      func([]string) error { return runHelper("env") },
		"conflict": func([]string) error { return runHelper("conflict") },
		"hang":     func([]string) error { return runHelper("hang") },
	}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("helper process")
	}
}

// runHelper runs helperPlugin in mode until the runtime shuts it down or
// goes away, or the process gets SIGTERM.
func runHelper(mode string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := stub.New(&helperPlugin{name: os.Getenv(api.PluginNameEnvVar), mode: mode})
	if err == nil {
		err = s.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper plugin:", err)
	}
	return nil
}
