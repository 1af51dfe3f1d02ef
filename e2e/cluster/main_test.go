package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// env holds what TestMain built for the tests.
var env struct {
	tools *harness.Tools
	kube  *harness.KubeTools
	// imageTar holds the pause, workload and httpget images; plugin[v]
	// the gpu-env plugin's image tagged v (pluginTags); loggerTar the
	// logger plugin's image tagged pluginTags[0] (deploy/README.md's
	// second helm install).
	imageTar  string
	plugin    map[string]string
	loggerTar string
	// recorderTar is the recorder's image (issue 41), tagged
	// pluginTags[0]; nri the nri command, which replays its recording.
	recorderTar, nri string
	// helm is the helm command of the e2e module's helm.sh/helm/v3.
	helm string
	repo string
	work string
	skip string // why the tests skip (not root)
}

// pluginTags are the tags of the gpu-env images: the first deployed,
// the second rolled out.
var pluginTags = [2]string{"dev", "dev2"}

// The test's images, as named in containerd's image store.
const (
	httpgetImage = "localhost/nrikit-httpget:1"
)

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL: nrikit cluster: "+format+"\n", args...)
		return 1
	}
	if os.Geteuid() != 0 {
		env.skip = fmt.Sprintf("the cluster test needs root (a kubelet, containerd, runc, namespaces and cgroups); running as uid %d", os.Geteuid())
		return m.Run()
	}
	if err := harness.Preflight(); err != nil {
		return fail("cannot run on this machine: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	wd, err := os.Getwd()
	if err != nil {
		return fail("%v", err)
	}
	e2eDir := filepath.Dir(wd)
	env.repo = filepath.Dir(e2eDir)
	phase := func(name string, start time.Time) {
		fmt.Fprintf(os.Stderr, "cluster: %s took %s\n", name, time.Since(start).Round(time.Millisecond))
	}

	// containerd, ctr, the shim and crictl: the e2e suite's cache.
	start := time.Now()
	e2eCache := os.Getenv("NRIKIT_E2E_BIN")
	if e2eCache == "" {
		e2eCache = harness.DefaultBinCache(e2eDir)
	}
	if env.tools, err = harness.EnsureTools(ctx, goBin, e2eCache, os.Stderr); err != nil {
		return fail("%v", err)
	}
	// The pods' network, before the long build of Kubernetes: without the
	// CNI plugins no pod of the node becomes ready.
	if err := harness.EnsurePodNetwork(ctx, os.Stderr); err != nil {
		return fail("%v", err)
	}
	phase("containerd, crictl, runc and the CNI plugins", start)
	start = time.Now()
	kubeCache := os.Getenv("NRIKIT_CLUSTER_BIN")
	if kubeCache == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return fail("no user cache directory for the Kubernetes binaries (set NRIKIT_CLUSTER_BIN): %v", err)
		}
		kubeCache = filepath.Join(uc, "nrikit")
	}
	if env.kube, err = harness.EnsureKube(ctx, goBin, filepath.Join(e2eDir, "kubebuild"), kubeCache, os.Stderr); err != nil {
		return fail("%v", err)
	}
	phase("Kubernetes "+harness.KubernetesVersion+" and kine", start)
	start = time.Now()
	if env.helm, err = harness.EnsureHelm(ctx, goBin, e2eDir, kubeCache, os.Stderr); err != nil {
		return fail("%v", err)
	}
	phase("helm", start)

	env.work = filepath.Join(os.TempDir(), fmt.Sprintf("nrikit-e2e-build-%d", os.Getpid()))
	if err := os.MkdirAll(env.work, 0o755); err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(env.work)

	// containerd v2.4.2 on nrikit (compat/nri), as `make test-e2e`'s second
	// run builds it; its ctr and shim stay the released ones.
	start = time.Now()
	build := harness.GoBuild{Go: goBin, Dir: filepath.Join(env.repo, "compat", "containerdbuild"), Out: filepath.Join(env.work, "containerd-nrikit"),
		Packages: []string{"github.com/containerd/containerd/v2/cmd/containerd"}}
	if err := build.Run(ctx, os.Stderr); err != nil {
		return fail("building containerd on nrikit: %v", err)
	}
	env.tools.Containerd = filepath.Join(env.work, "containerd-nrikit", "containerd")
	phase("containerd on nrikit (compat/nri)", start)

	start = time.Now()
	imgBin := filepath.Join(env.work, "images")
	static := harness.GoBuild{Go: goBin, Dir: e2eDir, Out: imgBin, Env: []string{"CGO_ENABLED=0"},
		Packages: []string{"./cmd/pause", "./cmd/workload", "./cmd/httpget"}}
	if err := static.Run(ctx, os.Stderr); err != nil {
		return fail("%v", err)
	}
	env.imageTar = filepath.Join(env.work, "images.tar")
	if err := harness.WriteImages(env.imageTar,
		harness.Pause(imgBin),
		harness.Image{Ref: harness.WorkloadImage, Binary: filepath.Join(imgBin, "workload"), Name: "workload"},
		harness.Image{Ref: httpgetImage, Binary: filepath.Join(imgBin, "httpget"), Name: "httpget"},
	); err != nil {
		return fail("writing images: %v", err)
	}
	env.plugin = map[string]string{}
	for _, tag := range pluginTags {
		out := filepath.Join(env.work, "plugin-"+tag)
		// deploy/images, as `make images VERSION=TAG` runs it.
		args := []string{"run", ".", "-root", env.repo, "-out", out, "-version", tag, "-go", goBin, "gpu-env"}
		if tag == pluginTags[0] {
			args = append(args, "logger", "recorder")
			env.loggerTar = filepath.Join(out, "logger.tar")
			env.recorderTar = filepath.Join(out, "recorder.tar")
		}
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = filepath.Join(env.repo, "deploy", "images")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fail("building the gpu-env image %s: %v\n%s", tag, err, b)
		}
		env.plugin[tag] = filepath.Join(out, "gpu-env.tar")
	}
	phase("images", start)
	start = time.Now()
	nriBuild := harness.GoBuild{Go: goBin, Dir: env.repo, Out: filepath.Join(env.work, "nrikit"), Packages: []string{"./cmd/nri"}}
	if err := nriBuild.Run(ctx, os.Stderr); err != nil {
		return fail("building nri: %v", err)
	}
	env.nri = filepath.Join(env.work, "nrikit", "nri")
	phase("nri", start)

	if swept, err := harness.SweepStaleClusters(ctx, env.tools.Runc); err != nil || len(swept) > 0 {
		fmt.Fprintf(os.Stderr, "cluster: cleaned up after earlier runs: %v %v\n", swept, err)
	}
	stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		fmt.Fprintln(os.Stderr, "cluster: interrupted: stopping the cluster")
		live.Range(func(k, _ any) bool {
			_ = k.(*harness.Cluster).Close(context.Background(), false)
			return true
		})
		os.RemoveAll(env.work)
		os.Exit(1)
	}()
	return m.Run()
}
