package simulator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/policy"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/runtimerec"
)

// recordHelpers plays the helper scenario (mode env) recording the
// runtime, and returns the recording and the scenario's policy.
func recordHelpers(t *testing.T) (*record.Recording, *policy.Policy) {
	t.Helper()
	t.Setenv(helperEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rec")
	no := false
	rec, err := runtimerec.Start(record.Config{Path: path, Redact: &no}, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("%EXE%", exe, "%MODE%", "env").Replace(helperScenario)
	sc, err := scenario.Parse("helpers.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(sc, WithTimeouts(10*time.Second, 10*time.Second), WithRecording(rec))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Play(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sim.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return r, sc.CompiledPolicy
}

// replayHelpers replays rec with the helper plugins of the scenario as
// extra plugins (wrappers running the test binary) under pol, plugin two
// setting shares CPU shares in UpdateContainer.
func replayHelpers(t *testing.T, rec *record.Recording, pol *policy.Policy, shares int) *Outcome {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := []Option{WithPolicy(pol)}
	for _, p := range []string{"10-one", "20-two"} {
		w := filepath.Join(dir, p)
		script := fmt.Sprintf("#!/bin/sh\nexec %s -test.run='^TestHelperProcess$' -- env\n", exe)
		if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithExtraPlugin(w))
	}
	t.Setenv(helperSharesEnv, fmt.Sprint(shares))
	r, err := NewReplay(rec, append(opts, WithTimeouts(10*time.Second, 10*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer r.Stop(ctx)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := r.Replay(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplayUpdates records the helper scenario with a recording
// runtime, then replays it: with the same plugins nothing differs, the
// creations and the UpdateContainer and StopContainer compared, each
// plugin's answer too; with plugin two setting other CPU shares, exactly
// the update of container a differs, in linux.resources.cpu.shares.
func TestReplayUpdates(t *testing.T) {
	rec, pol := recordHelpers(t)
	idx := IndexRecording(rec)
	if !idx.PerPlugin || len(idx.Creations) != 2 || len(idx.Changes) != 2 {
		t.Fatalf("index: per plugin %v, %d creations, %d changes", idx.PerPlugin, len(idx.Creations), len(idx.Changes))
	}

	cmp := &Comparer{Names: func(id string) string { return idx.Names[id] }}
	same := cmp.WithNode(idx, replayHelpers(t, rec, pol, 777))
	var creations, changes int
	for _, c := range same {
		if c.Differs {
			t.Errorf("with the same plugins, %s %s differs: %+v", c.Event, c.Name, c)
		}
		if c.Event == "CreateContainer" {
			creations++
			if len(c.Answers) == 0 {
				t.Errorf("%s: no plugin's answer compared", c.Name)
			}
		} else {
			changes++
		}
	}
	if creations != 2 || changes < 1 {
		t.Errorf("compared %d creations and %d changes: %+v", creations, changes, same)
	}

	var differ []report.ReplayContainer
	for _, c := range cmp.WithNode(idx, replayHelpers(t, rec, pol, 555)) {
		if c.Differs {
			differ = append(differ, c)
		}
	}
	if len(differ) != 1 || differ[0].Event != "UpdateContainer" || differ[0].Name != "ns/p/a" || len(differ[0].Changes) != 1 ||
		differ[0].Changes[0].Path != "linux.resources.cpu.shares" || differ[0].Changes[0].Old != "777" || differ[0].Changes[0].New != "555" {
		t.Errorf("with other shares: %+v, want the update of a's cpu.shares 777 -> 555", differ)
	}
}

// TestNodeChangeFromPluginRecording checks what a plugin's recording
// tells of an UpdateContainer (the resources PostUpdateContainer reported,
// else those the recorder was asked to update to) and that a
// StopContainer is not compared without the plugins' answers.
func TestNodeChangeFromPluginRecording(t *testing.T) {
	pod := &api.PodSandbox{Id: "p", Name: "p", Namespace: "ns"}
	ctr := &api.Container{Id: "c", Name: "c", PodSandboxId: "p"}
	asked := &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(100)}}
	after := &api.Container{Id: "c", Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(200)}}}}
	upd := &Changed{Event: api.Event_UPDATE_CONTAINER, Pod: pod, Container: ctr, Resources: asked}
	node, ok := nodeChange(upd, &NodeChange{After: after}, false)
	if !ok || node.Result["c"].GetCpu().GetShares().GetValue() != 200 {
		t.Errorf("after PostUpdateContainer: %v %v", node, ok)
	}
	node, ok = nodeChange(upd, &NodeChange{}, false)
	if !ok || node.Result["c"].GetCpu().GetShares().GetValue() != 100 {
		t.Errorf("without PostUpdateContainer: %v %v", node, ok)
	}
	if _, ok := nodeChange(&Changed{Event: api.Event_STOP_CONTAINER, Pod: pod, Container: ctr}, &NodeChange{}, false); ok {
		t.Error("a StopContainer was compared without the plugins' answers")
	}
	// With the answers: merged again, without the refused one.
	answers := []Answer{
		{Plugin: "10-a", Response: &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{{ContainerId: "c",
			Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(300)}}}}}}},
		{Plugin: "20-b", Refused: []string{"update.linux.resources.memory"}, Response: &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{{ContainerId: "c",
			Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1)}}}}}}},
	}
	node, ok = nodeChange(upd, &NodeChange{Answers: answers}, true)
	if !ok || node.Result["c"].GetCpu().GetShares().GetValue() != 300 || node.Result["c"].GetMemory().GetLimit() != nil {
		t.Errorf("from the answers: %v %v", node, ok)
	}
}
