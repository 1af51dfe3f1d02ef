package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The recording of issue 41 in the cluster: the recorder DaemonSet
// (deploy/kustomize/overlays/recorder, unchanged) records the node
// through the gpu-env DaemonSet's rollout (rolloutNewImage), and nri
// replay plays the recording through the plugin set as it was before the
// rollout (gpu-env with the DaemonSet's configuration, under the node's
// policy): it must reproduce the final environment of every pod created
// during the rollout, container by container, against the node's.

// The recorder's DaemonSet and its host directory (inside the cluster's
// mount namespace: /var/lib there is the cluster's own tmpfs).
const (
	recorderSelector = "app.kubernetes.io/name=nri-plugin-recorder"
	recorderDir      = "/var/lib/nri-record"
)

// recorderDeployed creates the recorder's directory on the node and
// applies the recorder's overlay; it returns once the recorder pod is
// Ready (registered with containerd).
func recorderDeployed(t *testing.T, n *node) {
	t.Helper()
	if out, err := n.Exec(n.ctx, "mkdir", "-m", "0700", "-p", recorderDir); err != nil {
		t.Fatalf("mkdir %s on the node: %v\n%s", recorderDir, err, out)
	}
	start := time.Now()
	n.kubectl("apply", "-k", filepath.Join(env.repo, "deploy", "kustomize", "overlays", "recorder"))
	n.kubectl("-n", pluginNS, "rollout", "status", "daemonset/nri-plugin-recorder", "--timeout=120s")
	p := n.readyPod(pluginNS, recorderSelector, time.Minute)
	evidence(t, "recorder DaemonSet applied: pod %s Ready in %s", p.Metadata.Name, time.Since(start).Round(time.Millisecond))
}

// replayedRollout removes the recorder (closing its recording), copies the
// recording and its key off the node, and replays it through gpu-env as
// configured before the rollout, under the node's policy: nothing may
// differ, and every pod of pods (those created during the rollout) must
// be among the containers replayed, each as the node made it.
func replayedRollout(t *testing.T, n *node, pods []pod, gpuConfig string) {
	t.Helper()
	start := time.Now()
	n.kubectl("delete", "-k", filepath.Join(env.repo, "deploy", "kustomize", "overlays", "recorder"), "--wait=true", "--timeout=120s")
	n.noPods(pluginNS, recorderSelector, time.Minute)
	dir := t.TempDir()
	file := filepath.Join(dir, "node.nrirec")
	for _, f := range []string{"node.nrirec", "node.nrirec.key"} {
		b, err := n.Exec(n.ctx, "cat", filepath.Join(recorderDir, f))
		if err != nil {
			t.Fatalf("reading the recorder's %s on the node: %v", f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "gpu-env.yaml")
	if err := os.WriteFile(conf, []byte(gpuConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(dir, "plugins", "50-gpu-env")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, []byte(fmt.Sprintf("#!/bin/sh\nexec %s plugin gpu-env -config %s\n", env.nri, conf)), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(n.ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.nri, "replay", file, "--plugin", plugin, "--policy", shippedPolicy(), "--output", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var rep struct {
		Node    string `json:"node"`
		Summary struct {
			Events, Pods, Containers, Differ int
		} `json:"summary"`
		Containers []struct {
			Name    string `json:"name"`
			ID      string `json:"id"`
			Differs bool   `json:"differs"`
			Basis   string `json:"basis"`
		} `json:"containers"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("nri replay: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 || rep.Summary.Differ != 0 {
		t.Fatalf("nri replay of the rollout through the plugin set before it: exit %d, %d container(s) differ\n%s\n%s", code, rep.Summary.Differ, out, stderr.String())
	}
	replayed := map[string]string{} // container ID → basis
	for _, c := range rep.Containers {
		replayed[c.ID] = c.Basis
	}
	for _, p := range pods {
		id := p.Status.ContainerStatuses[0].ContainerID
		id = id[strings.Index(id, "://")+3:]
		if basis, ok := replayed[id]; !ok || basis != "validation" {
			t.Errorf("pod %s's container %s: replayed %v (basis %q), want reproduced from the node's validation", p.Metadata.Name, id, ok, basis)
		}
	}
	evidence(t, "nri replay of the recording (node %s, %d events, %d pods, %d containers created) through gpu-env as before the rollout, under the node's policy: exit 0, nothing differs; each of the %d pods created during the rollout reproduced (basis validation); warnings %q; in %s",
		rep.Node, rep.Summary.Events, rep.Summary.Pods, rep.Summary.Containers, len(pods), rep.Warnings, time.Since(start).Round(time.Millisecond))
}
