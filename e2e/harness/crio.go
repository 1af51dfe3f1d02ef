package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Crio is one CRI-O daemon with a private storage, state, sockets and NRI
// directories under its Layout's Dir (see [Runtime]). Its configuration
// is /work/shared/real-crio's crio.conf.in, checked on this kind of
// machine: cgroupfs, no SELinux, runc behind a wrapper that clamps
// CRI-O's infra oomScoreAdj of -998 to 0 (root here lacks
// CAP_SYS_RESOURCE, and CRI-O has no option like containerd's
// restrict_oom_score_adj), the pause image pinned and loaded locally.
type Crio struct {
	*Layout

	opts       Options
	config     string
	cmd        *exec.Cmd
	exited     chan struct{}
	loaded     bool
	createdCNI bool // /var/lib/cni was missing before the first start
}

// cniCacheDir is where libcni keeps its results cache, whatever CRI-O is
// told; Close removes it when it appeared for a CRI-O with PodNetwork.
const cniCacheDir = "/var/lib/cni"

var _ Runtime = (*Crio)(nil)

// NewCrio prepares a CRI-O instance in a new directory under parent
// (os.TempDir if empty) without starting it; opts.Tools.Crio must be set.
func NewCrio(parent string, opts Options) (*Crio, error) {
	if opts.Tools == nil || opts.Tools.Crio == nil {
		return nil, errNoCrio
	}
	l, err := newLayout(parent, "crio.log", "storage", "runroot", "runc", "crio.conf.d", "crio-hooks.d", "cni/net.d", "lib", "exits", "attach", "ns")
	if err != nil {
		return nil, err
	}
	l.Address = filepath.Join(l.Dir, "crio.sock")
	c := &Crio{Layout: l, config: filepath.Join(l.Dir, "crio.conf"), opts: opts}
	type file struct {
		path, data string
		mode       os.FileMode
	}
	files := []file{
		{c.config, c.configTOML(), 0o644},
		{filepath.Join(l.Dir, "policy.json"), `{"default": [{"type": "insecureAcceptAnything"}]}` + "\n", 0o644},
		// The wrapper takes the real runtime as its first argument.
		{c.runtimePath(), fmt.Sprintf("#!/bin/sh\nexec %s %s \"$@\"\n", shellQuote(opts.Tools.Crio.RuncWrap), shellQuote(opts.Tools.Runc)), 0o755},
	}
	if opts.PodNetwork {
		files = append(files, file{filepath.Join(l.Dir, "cni", "net.d", "10-nrikit-e2e.conflist"), cniConfig(l.Dir), 0o644})
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.data), f.mode); err != nil {
			return nil, err
		}
	}
	if err := l.writeCrictlConfig(); err != nil {
		return nil, err
	}
	return c, nil
}

// Kind returns "CRI-O".
func (c *Crio) Kind() string { return "CRI-O" }

// Paths returns the instance's layout.
func (c *Crio) Paths() *Layout { return c.Layout }

func (c *Crio) runtimePath() string { return filepath.Join(c.Dir, "runc-wrap") }

// configTOML is crio.conf for this instance.
func (c *Crio) configTOML() string {
	validator := ""
	if v := c.opts.DefaultValidator; v != nil {
		validator = fmt.Sprintf("\n[crio.nri.default_validator]\nnri_enable_default_validator = true\n"+
			"nri_validator_reject_oci_hook_adjustment = %v\nnri_validator_required_plugins = %s\n", v.RejectOCIHooks, tomlStrings(v.RequiredPlugins))
	}
	r := strings.NewReplacer("@CNIBIN@", cniPluginDir, "@STATE@", c.Dir, "@PINNS@", c.opts.Tools.Crio.Pinns, "@RUNTIME@", c.runtimePath(),
		"@CONMON@", c.opts.Tools.Crio.Conmon, "@PAUSE@", PauseImage, "@TIMEOUT@", c.opts.requestTimeout().String(),
		"@VALIDATOR@", validator)
	return r.Replace(crioConfigTemplate)
}

const crioConfigTemplate = configHeader + `
[crio]
root = "@STATE@/storage"
runroot = "@STATE@/runroot"
storage_driver = "overlay"
log_dir = "@STATE@/pods"
version_file = "@STATE@/run/version"
version_file_persist = "@STATE@/lib/version"
clean_shutdown_file = "@STATE@/lib/clean.shutdown"

[crio.api]
listen = "@STATE@/crio.sock"
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
selinux = false
pinns_path = "@PINNS@"
namespaces_dir = "@STATE@/ns"
container_exits_dir = "@STATE@/exits"
container_attach_socket_dir = "@STATE@/attach"
# CRI-O's own OCI hooks directory, empty: the hook-injector plugin reads another.
hooks_dir = ["@STATE@/crio-hooks.d"]
cdi_spec_dirs = ["@STATE@/cdi"]
log_level = "debug"

[crio.runtime.runtimes.runc]
runtime_path = "@RUNTIME@"
runtime_type = "oci"
runtime_root = "@STATE@/runc"
monitor_path = "@CONMON@"
monitor_cgroup = "pod"

[crio.image]
pause_image = "@PAUSE@"
pause_command = "/pause"
pinned_images = ["@PAUSE@"]
signature_policy = "@STATE@/policy.json"
namespaced_auth_dir = "@STATE@/auth"
signature_policy_dir = "@STATE@/policies"

[crio.network]
network_dir = "@STATE@/cni/net.d"
plugin_dirs = ["@CNIBIN@"]

[crio.nri]
enable_nri = true
nri_listen = "@STATE@/run/nri.sock"
nri_plugin_dir = "@STATE@/nri-plugins"
nri_plugin_config_dir = "@STATE@/nri-conf.d"
nri_plugin_registration_timeout = "5s"
nri_plugin_request_timeout = "@TIMEOUT@"
@VALIDATOR@`

// cniConfig is a bridge network with host-local addresses, its state
// kept under dir. The bridge is made in the runtime's own network
// namespace: pods reach nothing beyond it.
func cniConfig(dir string) string {
	return fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "nrikit-e2e", "plugins": [{"type": "bridge", "bridge": "nrikit0",
  "isGateway": true, "ipMasq": false, "ipam": {"type": "host-local", "dataDir": %q,
  "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
`, filepath.Join(dir, "cni", "ipam"))
}

// cniPluginDir is where Debian's containernetworking-plugins installs
// the CNI plugins.
const cniPluginDir = "/usr/lib/cni"

// CRI returns a crictl client for this CRI-O.
func (c *Crio) CRI() *CRI {
	return &CRI{Crictl: c.opts.Tools.Crictl, Config: filepath.Join(c.Dir, "crictl.yaml")}
}

// Running reports whether the daemon is running.
func (c *Crio) Running() bool {
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// Start loads the images at the first start, then starts CRI-O in a new
// network namespace with only loopback up and waits until it serves CRI
// and NRI.
func (c *Crio) Start(ctx context.Context) error {
	if c.Running() {
		return errors.New("CRI-O is already running")
	}
	if !c.loaded {
		if _, err := os.Stat(cniCacheDir); c.opts.PodNetwork && errors.Is(err, os.ErrNotExist) {
			c.createdCNI = true
		}
		tars := append([]string{c.opts.ImageTar}, c.opts.ExtraImageTars...)
		if err := LoadImages(ctx, c.opts.Tools.Crio.Copyimg, c.Dir, tars...); err != nil {
			return err
		}
		c.loaded = true
	}
	logf, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== nrikit e2e: starting CRI-O at %s\n", time.Now().Format(time.RFC3339Nano))
	// unshare execs sh, which execs crio: the process is crio. The
	// drop-in directory is empty, so that /etc/crio is not read.
	cmd := exec.Command("unshare", "-n", "--", "/bin/sh", "-c", `ip link set lo up && exec "$0" --config "$1" --config-dir "$2"`,
		c.opts.Tools.Crio.Crio, c.config, filepath.Join(c.Dir, "crio.conf.d"))
	cmd.Env = []string{
		"PATH=" + filepath.Dir(c.opts.Tools.Runc) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting CRI-O: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()

	cri := c.CRI()
	err = Eventually(ctx, 60*time.Second, func() error {
		if !c.Running() {
			return Permanent(fmt.Errorf("CRI-O exited: %s; log tail:\n%s", c.cmd.ProcessState, c.LogTail(30)))
		}
		if _, err := os.Stat(c.NRISocket); err != nil {
			return fmt.Errorf("no NRI socket yet: %w", err)
		}
		_, err := cri.Run(ctx, "version")
		return err
	})
	if err != nil {
		return fmt.Errorf("CRI-O did not become ready: %w", err)
	}
	return nil
}

// Stop stops CRI-O with SIGTERM (SIGKILL after 20s). Its conmons and
// containers keep running, as on a node.
func (c *Crio) Stop(ctx context.Context) error {
	if !c.Running() {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return nil
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	_ = c.cmd.Process.Kill()
	<-c.exited
	return fmt.Errorf("CRI-O did not stop on SIGTERM within 20s: killed")
}

// Restart stops and starts CRI-O with the same configuration and state.
func (c *Crio) Restart(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Pid returns the daemon's process id (0 if it is not running).
func (c *Crio) Pid() int {
	if !c.Running() {
		return 0
	}
	return c.cmd.Process.Pid
}

// Close removes every pod, stops CRI-O, kills the conmons and containers
// it left, unmounts what remains under Dir and, unless keep is set,
// removes Dir. It returns every problem it met.
func (c *Crio) Close(ctx context.Context, keep bool) error {
	var errs []error
	if c.Running() {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		c.stopPods(cctx)
		if _, err := c.CRI().Run(cctx, "rmp", "--all", "--force"); err != nil {
			errs = append(errs, fmt.Errorf("removing pods: %w", err))
		}
		cancel()
	}
	if err := c.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, killCrioLeftovers(ctx, c.Dir, c.opts.Tools.Runc)...)
	if err := unmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	if c.createdCNI {
		// Removed only if empty: the cache of pods torn down is.
		_ = os.Remove(filepath.Join(cniCacheDir, "results"))
		_ = os.Remove(cniCacheDir)
	}
	if !keep {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopPods stops every pod with a short deadline. CRI-O gives a pod's
// processes the time left before StopPodSandbox's deadline to exit on
// SIGTERM before it kills them, and on a busy machine a pod's infra
// process sometimes does not exit on it (seen: 3 of 8 pods stopped a
// second after their container started; a PID namespace's first process
// ignores signals it has no handler for yet, and some infra processes had
// none a second after RunPodSandbox): with crictl's 30s timeout, `crictl
// rmp` would fail. Failures are left to rmp.
func (c *Crio) stopPods(ctx context.Context) {
	out, err := c.CRI().Run(ctx, "pods", "-q")
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_, _ = c.CRI().Run(ctx, "--timeout", "5s", "stopp", id)
	}
}

// killCrioLeftovers kills the containers in the runc root under dir and
// the conmons monitoring containers of the CRI-O whose directory is dir
// (their command line names paths under it).
func killCrioLeftovers(ctx context.Context, dir, runc string) []error {
	errs := killRuncContainers(ctx, runc, filepath.Join(dir, "runc"))
	for _, pid := range processesWithArg("conmon", dir+"/") {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Signal(syscall.SIGKILL)
		}
		waitGone(pid, 5*time.Second)
	}
	return errs
}

// killRuncContainers kills and deletes every container of the runc root.
func killRuncContainers(ctx context.Context, runc, root string) []error {
	var errs []error
	out, err := exec.CommandContext(ctx, runc, "--root", root, "list", "-q").Output()
	if err != nil {
		return nil
	}
	for _, id := range strings.Fields(string(out)) {
		_ = exec.CommandContext(ctx, runc, "--root", root, "kill", "--all", id, "KILL").Run()
		if out, err := exec.CommandContext(ctx, runc, "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("runc delete %s: %v: %s", id, err, out))
		}
	}
	return errs
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
