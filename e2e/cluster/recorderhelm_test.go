package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelmChartRendersRecorder renders deploy/helm/nrikit-plugin with
// the recorder's values (deploy/README.md, Recording a node) and checks
// that the recording's host directory is the one thing mounted
// read-write, from a hostPath of type Directory (created by no one but
// the administrator), with the node's name in NODE_NAME; without
// recordingDir, the chart mounts no such directory.
func TestHelmChartRendersRecorder(t *testing.T) {
	ch := loadChart(t)
	conf, err := os.ReadFile(filepath.Join(env.repo, "deploy", "kustomize", "overlays", "recorder", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const dir = "/var/lib/nri-record"
	r := renderChart(t, ch, map[string]any{
		"plugin":       map[string]any{"name": "recorder", "index": 99},
		"image":        map[string]any{"repository": "localhost/nrikit/recorder"},
		"recordingDir": dir,
		"config":       string(conf),
		"tolerations":  nil,
	})
	spec := r.ds.Spec.Template.Spec
	c := spec.Containers[0]
	var writable []string
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			writable = append(writable, m.Name+":"+m.MountPath)
		}
	}
	if strings.Join(writable, ",") != "recordings:"+dir {
		t.Errorf("writable mounts %v, want recordings at %s alone", writable, dir)
	}
	var hostPaths []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path+":"+string(*v.HostPath.Type))
		}
	}
	if strings.Join(hostPaths, ",") != "/var/run/nri:Directory,"+dir+":Directory" {
		t.Errorf("host paths %v", hostPaths)
	}
	var node bool
	for _, e := range c.Env {
		node = node || e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}
	if !node || r.cm.Data["index"] != "99" || !strings.Contains(r.cm.Data["config.yaml"], "path: "+dir+"/") {
		t.Errorf("NODE_NAME from spec.nodeName %v, ConfigMap %v", node, r.cm.Data)
	}
	// The default values mount no recording directory.
	d := renderChart(t, ch, nil)
	for _, v := range d.ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path != "/var/run/nri" {
			t.Errorf("the default values mount %s", v.HostPath.Path)
		}
	}
}
