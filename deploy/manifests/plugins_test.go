package manifests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestPluginsAcceptTheirArgs builds every overlay's plugin, as deploy/images
// does, and starts it with the DaemonSet's arguments and environment (the
// variables resolved as the kubelet resolves them), the socket replaced by a
// path where no runtime listens and the metrics on a free port: each plugin
// must get past its flags and try to connect, which shows that every
// argument is a flag of that plugin with a valid value.
func TestPluginsAcceptTheirArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	names := overlays(t)
	root := repoRoot(t)
	bin := t.TempDir()
	args := []string{"build", "-trimpath", "-o", bin + string(filepath.Separator)}
	for _, name := range names {
		pkg := "./plugins/" + name
		if _, err := os.Stat(filepath.Join(root, "plugins", name, "cmd", name)); err == nil {
			pkg += "/cmd/" + name
		}
		args = append(args, pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	goCmd := goCommand()
	build := exec.CommandContext(ctx, goCmd, args...)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r := render(t, filepath.Join(kustomizeDir, "overlays", name))
			c := &r.DaemonSets[0].Spec.Template.Spec.Containers[0]
			env := containerEnv(t, c, r)
			socket := filepath.Join(t.TempDir(), "nri.sock")
			argv := expandArgs(t, c.Args, env)
			for i := 0; i+1 < len(argv); i++ {
				switch argv[i] {
				case "-socket":
					argv[i+1] = socket
				case "-metrics-addr":
					argv[i+1] = "127.0.0.1:0"
				case "-config":
					// The overlay's configuration, which the plugin
					// must accept (it checks -config before connecting).
					argv[i+1] = overlayConfig(t, r)
				}
			}
			argv = append(argv, "-reconnect=false")
			pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer pcancel()
			cmd := exec.CommandContext(pctx, filepath.Join(bin, name), argv...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			err := cmd.Run()
			out := stderr.String()
			if err == nil {
				t.Fatalf("%s %q connected to nothing and exited 0:\n%s", name, argv, out)
			}
			if strings.Contains(out, "flag provided but not defined") || strings.Contains(out, "invalid value") {
				t.Fatalf("%s refuses the DaemonSet's arguments %q:\n%s", name, argv, out)
			}
			if !strings.Contains(out, socket) || !strings.Contains(out, "no such file or directory") {
				t.Errorf("%s %q did not try to connect to %s:\n%s", name, argv, socket, out)
			}
		})
	}
}

// containerEnv is the container's environment as the kubelet sets it,
// with the test's PATH.
func containerEnv(t *testing.T, c *corev1.Container, r *Rendered) []string {
	t.Helper()
	env, err := r.Env(c)
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"PATH=" + os.Getenv("PATH")}, env...)
}

// expandArgs replaces $(VAR) references as the kubelet does.
func expandArgs(t *testing.T, args, env []string) []string {
	t.Helper()
	out, err := ExpandArgs(args, env)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// overlayConfig writes the config.yaml of the overlay's ConfigMap (mounted
// at the -config path in the cluster) to a file and returns its path.
func overlayConfig(t *testing.T, r *Rendered) string {
	t.Helper()
	for _, cm := range r.ConfigMaps {
		if data, ok := cm.Data[filepath.Base(wantConfigFile)]; ok {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatalf("no ConfigMap holds %s", filepath.Base(wantConfigFile))
	return ""
}

// repoRoot is the repository's root, absolute.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join(pluginsDir, ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goCommand is the go command the tests build with: GO, or go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
