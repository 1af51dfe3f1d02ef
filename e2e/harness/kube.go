package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Pinned versions of the Kubernetes node the cluster test runs.
const (
	// KubernetesVersion is the k8s.io/kubernetes release of kube-apiserver,
	// kube-controller-manager, kube-scheduler, kubelet and kubectl, built
	// by the module e2e/kubebuild (which pins it in its go.mod).
	KubernetesVersion = "v1.37.2"
	// KineVersion is the release of kine, the etcd API on sqlite that
	// stores the API server's objects.
	KineVersion = "github.com/k3s-io/kine@v0.17.5"
)

// kubeCommands are the k8s.io/kubernetes commands the node runs.
var kubeCommands = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"}

// KubeTools are the absolute paths of the Kubernetes binaries.
type KubeTools struct {
	// APIServer, ControllerManager, Scheduler, Kubelet and Kubectl are
	// the k8s.io/kubernetes commands.
	APIServer, ControllerManager, Scheduler, Kubelet, Kubectl string
	// Kine is the etcd API server on sqlite.
	Kine string
}

// EnsureKube returns the Kubernetes binaries, building those missing
// into cacheDir (kubernetes-VERSION and kine-VERSION, each renamed into
// place only when complete): the k8s.io/kubernetes commands with `go
// build` in the module buildDir (e2e/kubebuild), kine with `go install
// pkg@version`, both from the Go module proxy. Cold, this costs about
// 1,900 CPU-seconds; progress goes to log.
func EnsureKube(ctx context.Context, goBin, buildDir, cacheDir string, log io.Writer) (*KubeTools, error) {
	kube := filepath.Join(cacheDir, "kubernetes-"+KubernetesVersion)
	pkgs := make([]string, len(kubeCommands))
	for i, c := range kubeCommands {
		pkgs[i] = "k8s.io/kubernetes/cmd/" + c
	}
	v := "k8s.io/component-base/version"
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	ldflags := fmt.Sprintf("-s -w -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean",
		v, KubernetesVersion, v, major, v, minor, v)
	err := buildInto(kube, log, func(tmp string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, goBin, append([]string{"build", "-o", tmp + "/", "-ldflags", ldflags}, pkgs...)...)
		cmd.Dir = buildDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		return cmd
	})
	if err != nil {
		return nil, err
	}
	_, kineRelease, _ := strings.Cut(KineVersion, "@")
	kine := filepath.Join(cacheDir, "kine-"+kineRelease)
	err = buildInto(kine, log, func(tmp string) *exec.Cmd {
		// kine needs cgo (sqlite).
		cmd := exec.CommandContext(ctx, goBin, "install", "-ldflags", "-s -w", KineVersion)
		cmd.Dir = tmp // outside any module: kine's own go.mod decides
		cmd.Env = append(os.Environ(), "GOBIN="+tmp)
		return cmd
	})
	if err != nil {
		return nil, err
	}
	return &KubeTools{
		APIServer:         filepath.Join(kube, "kube-apiserver"),
		ControllerManager: filepath.Join(kube, "kube-controller-manager"),
		Scheduler:         filepath.Join(kube, "kube-scheduler"),
		Kubelet:           filepath.Join(kube, "kubelet"),
		Kubectl:           filepath.Join(kube, "kubectl"),
		Kine:              filepath.Join(kine, "kine"),
	}, nil
}

// EnsureHelm returns the helm command of the version of helm.sh/helm/v3
// that the module moduleDir (e2e, whose go.mod lists it as a tool)
// requires, building it into cacheDir/helm-VERSION if missing, from the
// Go module proxy.
func EnsureHelm(ctx context.Context, goBin, moduleDir, cacheDir string, log io.Writer) (string, error) {
	const module = "helm.sh/helm/v3"
	list := exec.CommandContext(ctx, goBin, "list", "-m", "-f", "{{.Version}}", module)
	list.Dir = moduleDir
	list.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("the version of %s in %s: %w", module, moduleDir, err)
	}
	version := strings.TrimSpace(string(out))
	dir := filepath.Join(cacheDir, "helm-"+version)
	err = buildInto(dir, log, func(tmp string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", tmp+"/", "-ldflags",
			"-s -w -X "+module+"/internal/version.version="+version, module+"/cmd/helm")
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		return cmd
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "helm"), nil
}

// buildInto runs the build command made for the temporary directory
// (buildOnce: once per dir, renamed into place when complete).
func buildInto(dir string, log io.Writer, build func(tmp string) *exec.Cmd) error {
	return buildOnce(dir, log, func(tmp string) error {
		cmd := build(tmp)
		cmd.Env = append(cmd.Env, "GOFLAGS=-buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local")
		cmd.Stdout, cmd.Stderr = log, log
		start := time.Now()
		fmt.Fprintf(log, "cluster: building %s (%s)\n", dir, strings.Join(cmd.Args, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %s: %w", dir, strings.Join(cmd.Args, " "), err)
		}
		fmt.Fprintf(log, "cluster: built %s in %s\n", dir, time.Since(start).Round(time.Second))
		return nil
	})
}
