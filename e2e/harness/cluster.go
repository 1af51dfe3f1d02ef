package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The node's addresses inside its network namespace: the API server and
// the kubelet need a non-loopback address (the kubelet refuses a
// loopback node IP), so a veth pair whose both ends stay inside carries
// it, with a default route through the other end.
const (
	// NodeIP is the node's InternalIP and the API server's address.
	NodeIP = "10.250.0.1"
	// NodeName is the node's name.
	NodeName = "nrikit-node"
	apiPort  = "6443"
)

// ClusterOptions configure a single-node cluster.
type ClusterOptions struct {
	// Tools are containerd's, crictl's and runc's binaries; Tools.Containerd
	// is the containerd the node runs (the suite's build on nrikit).
	Tools *Tools
	// Kube are the Kubernetes binaries (EnsureKube).
	Kube *KubeTools
	// ImageTar and ExtraImageTars are imported into containerd before the
	// kubelet starts (ImageTar must hold PauseImage).
	ImageTar       string
	ExtraImageTars []string
	// DefaultValidator configures containerd's default validator.
	DefaultValidator *Validator
	// Policy, if not empty, is the node's policy (docs/policy.md),
	// written where containerd on nrikit reads it before containerd
	// starts (Containerd.PolicyPath; containerd reads it again within 10
	// seconds of a change).
	Policy string
}

// Cluster is a single-node Kubernetes: kine, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd and the kubelet, in
// one network and mount namespace of their own (held by a sleeping
// process) under a private directory. Pods get addresses on a CNI bridge
// inside that namespace; nothing in it can reach beyond it. Close stops
// everything and removes what it made.
type Cluster struct {
	// Dir is the private directory (logs in Dir/logs).
	Dir string
	// Kubeconfig is the administrator's kubeconfig (a token of group
	// system:masters).
	Kubeconfig string
	// Containerd is the node's runtime.
	Containerd *Containerd

	opts    ClusterOptions
	holder  *Process
	procs   []*Process // started after the holder, in start order
	enter   []string   // nsenter into the namespaces
	cgroups []string   // the per-hierarchy directories made for the kubelet's cgroup root
}

// clusterPrefix names the clusters' directories under os.TempDir.
const clusterPrefix = "nrikit-cluster-"

// StartCluster starts a node and waits until it is Ready. On failure it
// cleans up what it started and returns the error with the log tail of
// the component at fault.
func StartCluster(ctx context.Context, opts ClusterOptions) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", clusterPrefix)
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, opts: opts, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	defer func() {
		if err != nil {
			if cerr := c.Close(context.Background(), false); cerr != nil {
				err = fmt.Errorf("%w (cleanup: %v)", err, cerr)
			}
			c = nil
		}
	}()
	for _, d := range []string{"logs", "pki", "kine", "kubelet", "pod-logs", "sysctl", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return c, err
		}
	}
	c.Containerd, err = NewContainerd(dir, Options{Tools: opts.Tools, ImageTar: opts.ImageTar, ExtraImageTars: opts.ExtraImageTars,
		DefaultValidator: opts.DefaultValidator, PodNetwork: true})
	if err != nil {
		return c, err
	}
	if err := c.writeFiles(); err != nil {
		return c, err
	}
	if err := c.enterNamespaces(ctx); err != nil {
		return c, err
	}
	c.Containerd.opts.Enter = c.enter
	if opts.Policy != "" {
		if err := os.WriteFile(c.Containerd.PolicyPath(), []byte(opts.Policy), 0o644); err != nil {
			return c, fmt.Errorf("writing the node's policy: %w", err)
		}
	}
	if err := c.makeCgroups(); err != nil {
		return c, err
	}

	pki := func(f string) string { return filepath.Join(dir, "pki", f) }
	if _, err := c.start("kine", filepath.Join(dir, "kine"), opts.Kube.Kine, "--listen-address=127.0.0.1:2379"); err != nil {
		return c, err
	}
	api, err := c.start("kube-apiserver", dir, opts.Kube.APIServer,
		"--etcd-servers=http://127.0.0.1:2379",
		"--advertise-address="+NodeIP, "--bind-address=0.0.0.0", "--secure-port="+apiPort,
		"--tls-cert-file="+pki("apiserver.crt"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=AlwaysAllow",
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true", "--enable-priority-and-fairness=false", "--profiling=false",
		"--cert-dir="+filepath.Join(dir, "pki", "serving"))
	if err != nil {
		return c, err
	}
	err = Eventually(ctx, 3*time.Minute, func() error {
		if done, code := api.Exited(); done {
			return Permanent(fmt.Errorf("kube-apiserver exited with status %d:\n%s", code, tail(api.Log(), 30)))
		}
		_, err := c.Kubectl(ctx, "get", "--raw", "/readyz")
		return err
	})
	if err != nil {
		return c, fmt.Errorf("the API server did not become ready: %w\nkine:\n%s\nkube-apiserver:\n%s", err,
			tail(c.procs[0].Log(), 10), tail(api.Log(), 30))
	}
	if _, err := c.start("kube-controller-manager", dir, opts.Kube.ControllerManager,
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--service-account-private-key-file="+pki("sa.key"), "--root-ca-file="+pki("ca.crt"),
		"--use-service-account-credentials=false"); err != nil {
		return c, err
	}
	if _, err := c.start("kube-scheduler", dir, opts.Kube.Scheduler,
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1"); err != nil {
		return c, err
	}
	if err := c.Containerd.Start(ctx); err != nil {
		return c, err
	}
	kubelet, err := c.start("kubelet", dir, opts.Kube.Kubelet,
		"--config="+filepath.Join(dir, "kubelet.yaml"), "--kubeconfig="+c.Kubeconfig,
		"--root-dir="+filepath.Join(dir, "kubelet"), "--node-ip="+NodeIP, "--hostname-override="+NodeName)
	if err != nil {
		return c, err
	}
	err = Eventually(ctx, 3*time.Minute, func() error {
		if done, code := kubelet.Exited(); done {
			return Permanent(fmt.Errorf("kubelet exited with status %d:\n%s", code, tail(kubelet.Log(), 30)))
		}
		out, err := c.Kubectl(ctx, "get", "node", NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(out)) != "True" {
			return fmt.Errorf("node %s Ready=%q", NodeName, out)
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("the node did not become Ready: %w\nkubelet:\n%s", err, tail(kubelet.Log(), 40))
	}
	// The controller manager makes the default service account that every
	// pod needs.
	err = Eventually(ctx, 2*time.Minute, func() error {
		_, err := c.Kubectl(ctx, "-n", "default", "get", "serviceaccount", "default")
		return err
	})
	if err != nil {
		return c, fmt.Errorf("no default service account: %w\nkube-controller-manager:\n%s", err, tail(c.procs[2].Log(), 30))
	}
	return c, nil
}

// writeFiles writes the PKI, the token file, the kubeconfig, the
// kubelet's configuration and the pods' resolv.conf.
func (c *Cluster) writeFiles() error {
	if err := writePKI(filepath.Join(c.Dir, "pki"), net.ParseIP(NodeIP), net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")); err != nil {
		return err
	}
	token := fmt.Sprintf("nrikit-%d-%d", os.Getpid(), time.Now().UnixNano())
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: nrikit
  cluster: {server: "https://%s:%s", certificate-authority: %q}
users:
- name: admin
  user: {token: %q}
contexts:
- name: nrikit
  context: {cluster: nrikit, user: admin}
current-context: nrikit
`, NodeIP, apiPort, filepath.Join(c.Dir, "pki", "ca.crt"), token)
	// The kubelet's cgroups: one subtree, named after the directory.
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This host is cgroup v1, which kubelet 1.37 refuses without this.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %q
# Root here lacks CAP_SYS_RESOURCE.
oomScoreAdj: 0
containerRuntimeEndpoint: "unix://%s"
address: %q
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
resolvConf: %q
podLogsDir: %q
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
serializeImagePulls: false
syncFrequency: 10s
`, "/"+c.cgroupName(), c.Containerd.Address, NodeIP,
		filepath.Join(c.Dir, "resolv.conf"), filepath.Join(c.Dir, "pod-logs"))
	files := map[string]string{
		"tokens.csv":   token + ",admin,admin,system:masters\n",
		"kubeconfig":   kubeconfig,
		"kubelet.yaml": kubelet,
		"resolv.conf":  "nameserver " + NodeIP + "\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// cgroupName is the name of the kubelet's cgroup root.
func (c *Cluster) cgroupName() string { return filepath.Base(c.Dir) }

// enterNamespaces starts the process holding the network and mount
// namespaces and sets them up: loopback and the veth pair; a tmpfs on
// /run with containerd's NRI socket directory bind-mounted at /run/nri
// (the DaemonSets' hostPath /var/run/nri); tmpfs on /var/lib and /var/log,
// where the CNI plugins keep their cache (/var/lib/cni) and the kubelet
// links the containers' logs (/var/log/containers) whatever they are
// told; and stand-in files over the host-wide sysctls the kubelet writes.
func (c *Cluster) enterNamespaces(ctx context.Context) error {
	var err error
	c.holder, err = StartProcess("namespace holder", filepath.Join(c.Dir, "logs", "holder.log"), nil,
		"unshare", "-n", "-m", "--propagation", "private", "--", "sleep", "infinity")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "holder.pid"), []byte(strconv.Itoa(c.holder.Pid())), 0o644); err != nil {
		return err
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	err = Eventually(ctx, 10*time.Second, func() error {
		if done, code := c.holder.Exited(); done {
			return Permanent(fmt.Errorf("unshare exited with status %d: %s", code, c.holder.Log()))
		}
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", c.holder.Pid()))
		if err != nil || ns == own {
			return fmt.Errorf("the holder has not unshared yet")
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.enter = []string{"nsenter", "-t", strconv.Itoa(c.holder.Pid()), "-n", "-m", "--"}
	script := `set -e
ip link set lo up
ip link add nrikit-veth0 type veth peer name nrikit-veth1
ip addr add "$1/24" dev nrikit-veth0
ip link set nrikit-veth0 up
ip link set nrikit-veth1 up
ip route add default via "$2" dev nrikit-veth0
mount -t tmpfs -o mode=0755 nrikit-run /run
mount -t tmpfs -o mode=0755 nrikit-var-lib /var/lib
mount -t tmpfs -o mode=0755 nrikit-var-log /var/log
mkdir -p /run/nri
mount --bind "$3" /run/nri
for f in kernel/panic kernel/panic_on_oops vm/overcommit_memory; do
	s="$4/$(echo $f | tr / .)"
	cat "/proc/sys/$f" > "$s"
	mount --bind "$s" "/proc/sys/$f"
done
`
	argv := append(append([]string{}, c.enter...), "/bin/sh", "-c", script, "setup", NodeIP, "10.250.0.2",
		filepath.Dir(c.Containerd.NRISocket), filepath.Join(c.Dir, "sysctl"))
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("setting up the namespaces: %w\n%s", err, out)
	}
	return nil
}

// makeCgroups makes the kubelet's cgroup root in every hierarchy under
// /sys/fs/cgroup, with cpuset's cpus and mems copied from the root.
func (c *Cluster) makeCgroups() error {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join("/sys/fs/cgroup", e.Name(), c.cgroupName())
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("making the kubelet's cgroup root: %w", err)
		}
		c.cgroups = append(c.cgroups, d)
		if e.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuset", f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return fmt.Errorf("cpuset %s: %w", f, err)
				}
			}
		}
	}
	return nil
}

// start starts a component inside the namespaces, in dir, with its
// output in logs/NAME.log.
func (c *Cluster) start(name, dir string, argv ...string) (*Process, error) {
	full := append(append([]string{}, c.enter[:len(c.enter)-1]...), "--wd="+dir, "--")
	full = append(full, argv...)
	p, err := StartProcess(name, filepath.Join(c.Dir, "logs", name+".log"), []string{"HOME=" + filepath.Join(c.Dir, "home")}, full...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// Kubectl runs kubectl with the administrator's kubeconfig inside the
// namespaces and returns its standard output; the error holds its
// standard error.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, c.enter...), c.opts.Kube.Kubectl, "--kubeconfig="+c.Kubeconfig), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(c.Dir, "home"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &CommandError{Name: "kubectl", Args: args, Output: stderr.String(), Err: err}
	}
	return out, nil
}

// Command returns the command running argv inside the namespaces (a
// plain command, not a container) in the directory dir, for the caller
// to set its environment and output. A shell changes to dir once inside:
// entering the mount namespace resets the working directory, and a
// directory opened before (nsenter's --wd) is unreachable from the
// namespace's root (getcwd fails).
func (c *Cluster) Command(ctx context.Context, dir string, argv ...string) *exec.Cmd {
	full := append(append(append([]string{}, c.enter...), "/bin/sh", "-c", `cd "$0" && exec "$@"`, dir), argv...)
	return exec.CommandContext(ctx, full[0], full[1:]...)
}

// Exec runs argv inside the namespaces (a plain command, not a
// container) and returns its combined output.
func (c *Cluster) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	full := append(append([]string{}, c.enter...), argv...)
	return exec.CommandContext(ctx, full[0], full[1:]...).CombinedOutput()
}

// Logs returns the last n lines of each component's log, for a failed
// test.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "--- %s (%s):\n%s\n", p.Name, p.LogPath, tail(p.Log(), n))
	}
	if c.Containerd != nil {
		fmt.Fprintf(&b, "--- containerd (%s):\n%s\n", c.Containerd.LogPath, c.Containerd.LogTail(n))
	}
	return b.String()
}

// Close deletes the workloads, stops the components in the order that
// lets each stop cleanly (controller manager, scheduler, kubelet, API
// server, kine), closes containerd (its pods, shims and containers), ends
// the namespaces, removes the kubelet's cgroups and, unless keep is set,
// the directory. It returns every problem it met.
func (c *Cluster) Close(ctx context.Context, keep bool) error {
	var errs []error
	running := func(name string) *Process {
		for _, p := range c.procs {
			if p.Name == name {
				if done, _ := p.Exited(); !done {
					return p
				}
			}
		}
		return nil
	}
	if running("kube-apiserver") != nil && running("kubelet") != nil {
		dctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		_, err := c.Kubectl(dctx, "delete", "daemonsets,deployments,replicasets,jobs,pods", "--all", "--all-namespaces",
			"--grace-period=1", "--wait=true", "--timeout=80s")
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting the workloads: %w", err))
		}
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver", "kine"} {
		if p := running(name); p != nil {
			if err := p.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.Containerd != nil {
		if err := c.Containerd.Close(ctx, true); err != nil {
			errs = append(errs, err)
		}
	}
	if c.holder != nil {
		if err := c.holder.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, removeCgroups(c.cgroups)...)
	if !keep {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the cgroup directories and everything under
// them, deepest first, retrying for a while: a cgroup is busy until its
// last process has exited.
func removeCgroups(dirs []string) []error {
	var errs []error
	for _, d := range dirs {
		err := Eventually(context.Background(), 20*time.Second, func() error { return removeCgroupTree(d) })
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errs
}

func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SweepStaleClusters cleans up after clusters whose test process died
// without closing them: for each directory under os.TempDir whose
// namespace holder is gone, it kills the containers and shims left,
// removes the kubelet's cgroups and the directory. It returns the
// directories removed.
func SweepStaleClusters(ctx context.Context, runc string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), clusterPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "holder.pid"))
		if err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil && Alive(pid) {
				continue
			}
		} else if fi, serr := os.Stat(dir); serr != nil || time.Since(fi.ModTime()) < time.Hour {
			continue // being set up, or not a cluster's
		}
		if _, err := SweepStale(ctx, dir, runc); err != nil {
			errs = append(errs, err)
		}
		cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", filepath.Base(dir)))
		errs = append(errs, removeCgroups(cgroups)...)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		swept = append(swept, dir)
	}
	return swept, errors.Join(errs...)
}
