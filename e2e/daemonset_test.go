package e2e

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

	"github.com/nrikit/nrikit/e2e/harness"
)

// TestPluginImageAsPod runs a plugin the way deploy/kustomize deploys it
// (issue 17): the template plugin's OCI image from `make images`
// (deploy/images) is imported into containerd and run through CRI as a
// pod whose container is what the kubelet would ask for from the
// template overlay's DaemonSet (deploy/manifests' cri-container: same
// image, arguments, environment, security context, and the NRI socket
// directory mounted from the host, the ConfigMap's configuration file
// mounted as the kubelet would; only the host side of the socket mount is
// this containerd's socket directory instead of /var/run/nri). The plugin
// must register with containerd's NRI from inside the container and
// adjust another pod's container.
func TestPluginImageAsPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	imageTar := pluginImage(ctx, t, dir, "template")
	ctr := manifestContainer(ctx, t, "template", filepath.Join(dir, "volumes"))

	r := newRuntime(t, harness.Options{ExtraImageTars: []string{imageTar}})
	r.start()
	socketDir := filepath.Dir(r.NRISocket)
	for i, m := range ctr.Mounts {
		if m.HostPath == "/var/run/nri" {
			ctr.Mounts[i].HostPath = socketDir
		}
	}
	ctr.LogPath = "plugin.log"
	pod := harness.NewPod("kube-system", "nri-plugin-template")
	podID, ctrID, info := r.run(pod, ctr)
	evidence(t, "plugin pod %s container %s runs %q as uid %d from image %s", podID[:12], ctrID[:12],
		info.Spec.Process.Args, info.Spec.Process.User.UID, ctr.Image.Image)
	if !info.Spec.Root.Readonly {
		t.Errorf("the plugin container's root file system is writable; the manifest makes it read-only")
	}

	var logs string
	err := harness.Eventually(r.ctx, time.Minute, func() error {
		out, err := r.cri.Logs(r.ctx, ctrID)
		if err != nil {
			return err
		}
		logs = out
		if !strings.Contains(out, "synchronized") {
			return fmt.Errorf("the plugin has not synchronized yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the plugin in the pod did not register with %s: %v\nits output:\n%s", r.Kind(), err, logs)
	}
	evidence(t, "plugin log: %s", strings.TrimSpace(lineWith(logs, "configured")))

	_, _, winfo := r.run(harness.NewPod("default", "app"), harness.NewContainer("app"))
	wantEnv(t, winfo, "NRI_TEMPLATE", "injected-by-nri-template")
	if v := winfo.Spec.Annotations["template.nrikit.io/seen"]; v == "" {
		t.Errorf("annotation template.nrikit.io/seen missing from the adjusted container's spec")
	}
}

// pluginImage builds plugin's OCI image tarball with deploy/images, as
// `make images VERSION=dev` does, and returns its path.
func pluginImage(ctx context.Context, t *testing.T, dir, plugin string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, goCommand(), "run", ".", "-root", suite.repo, "-out", dir, "-version", "dev", "-go", goCommand(), plugin)
	cmd.Dir = filepath.Join(suite.repo, "deploy", "images")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the %s image: %v\n%s", plugin, err, out)
	}
	path := filepath.Join(dir, plugin+".tar")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("building the %s image: %v", plugin, err)
	}
	t.Logf("built %s in %s", path, time.Since(start).Round(time.Millisecond))
	return path
}

// manifestContainer returns the CRI configuration of the plugin container
// of deploy/kustomize/overlays/OVERLAY, rendered and translated by
// deploy/manifests' cri-container (which writes the ConfigMap volumes'
// files under volumes, as the kubelet does).
func manifestContainer(ctx context.Context, t *testing.T, overlay, volumes string) harness.ContainerConfig {
	t.Helper()
	cmd := exec.CommandContext(ctx, goCommand(), "run", "./cmd/cri-container", filepath.Join("..", "kustomize", "overlays", overlay), volumes)
	cmd.Dir = filepath.Join(suite.repo, "deploy", "manifests")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rendering the %s overlay: %v\n%s", overlay, err, stderr.String())
	}
	var c harness.ContainerConfig
	dec := json.NewDecoder(strings.NewReader(string(out)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("decoding the %s overlay's CRI container: %v\n%s", overlay, err, out)
	}
	return c
}

// goCommand is the go command the suite was started with.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
