package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Containerd is one containerd daemon with a private root, state,
// sockets and NRI directories under its Layout's Dir (see [Runtime]).
type Containerd struct {
	*Layout

	opts       Options
	config     string
	cmd        *exec.Cmd
	exited     chan struct{}
	imported   bool
	shimSocks  map[string]bool // entries of /run/containerd/s before the first start
	createdRun []string        // directories under /run the harness found missing
}

var _ Runtime = (*Containerd)(nil)

// shimSocketDir is where containerd's runc shim puts its sockets,
// whatever containerd's configuration says.
const shimSocketDir = "/run/containerd/s"

// containerdReady bounds the wait for a started containerd to answer
// CRI. It covers NRI's start with the pre-installed plugins, WASM modules
// compiled among them (TestWASMPlugin: seconds of CPU each), which took
// more than 30 seconds beside two CPU hogs; a containerd that exits ends
// the wait at once.
const containerdReady = 2 * time.Minute

// NewContainerd prepares a containerd instance in a new directory under
// parent (os.TempDir if empty) without starting it.
func NewContainerd(parent string, opts Options) (*Containerd, error) {
	l, err := newLayout(parent, "containerd.log", "root", "state", "runc", "certs.d", "cni/bin", "cni/net.d")
	if err != nil {
		return nil, err
	}
	l.Address = filepath.Join(l.Dir, "containerd.sock")
	c := &Containerd{Layout: l, config: filepath.Join(l.Dir, "config.toml"), opts: opts}
	if err := os.WriteFile(c.config, []byte(c.configTOML()), 0o644); err != nil {
		return nil, err
	}
	if opts.PodNetwork {
		if err := os.WriteFile(filepath.Join(l.Dir, "cni", "net.d", "10-nrikit-e2e.conflist"), []byte(cniConfig(l.Dir)), 0o644); err != nil {
			return nil, err
		}
	}
	if err := l.writeCrictlConfig(); err != nil {
		return nil, err
	}
	return c, nil
}

// Kind returns "containerd".
func (c *Containerd) Kind() string { return "containerd" }

// Paths returns the instance's layout.
func (c *Containerd) Paths() *Layout { return c.Layout }

// configTOML is the configuration of /work/shared/real-containerd's
// config.toml.in (checked on this kind of machine) with the harness's
// options.
func (c *Containerd) configTOML() string {
	validator := ""
	if v := c.opts.DefaultValidator; v != nil {
		validator = fmt.Sprintf("\n  [plugins.\"io.containerd.nri.v1.nri\".default_validator]\n    enable = true\n"+
			"    reject_oci_hook_adjustment = %v\n    required_plugins = %s\n", v.RejectOCIHooks, tomlStrings(v.RequiredPlugins))
		if v.TolerateMissingAnnotation != "" {
			validator += fmt.Sprintf("    tolerate_missing_plugins_annotation = %q\n", v.TolerateMissingAnnotation)
		}
	}
	cniBin := filepath.Join(c.Dir, "cni", "bin")
	if c.opts.PodNetwork {
		cniBin = cniPluginDir
	}
	r := strings.NewReplacer("@RC@", c.Dir, "@RUNC@", c.opts.Tools.Runc, "@TIMEOUT@", c.opts.requestTimeout().String(),
		"@PAUSE@", PauseImage, "@VALIDATOR@", validator, "@CNIBIN@", cniBin)
	return r.Replace(configTemplate)
}

const configTemplate = configHeader + `
version = 3
root = "@RC@/root"
state = "@RC@/state"

[grpc]
  address = "@RC@/containerd.sock"

[ttrpc]
  address = "@RC@/containerd.sock.ttrpc"

[debug]
  level = "debug"

[plugins]
  [plugins."io.containerd.nri.v1.nri"]
    disable = false
    disable_connections = false
    socket_path = "@RC@/run/nri.sock"
    plugin_path = "@RC@/nri-plugins"
    plugin_config_path = "@RC@/nri-conf.d"
    plugin_registration_timeout = "5s"
    plugin_request_timeout = "@TIMEOUT@"
@VALIDATOR@
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "@PAUSE@"
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = "@RC@/certs.d"

  [plugins."io.containerd.cri.v1.runtime"]
    cdi_spec_dirs = ["@RC@/cdi"]
    enable_selinux = false
    # root here lacks CAP_SYS_RESOURCE: without this runc fails every sandbox.
    restrict_oom_score_adj = true
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["@CNIBIN@"]
      conf_dir = "@RC@/cni/net.d"
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        disable_pause_image_pull = true
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "@RUNC@"
          Root = "@RC@/runc"
          SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri"]
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`

// CRI returns a crictl client for this containerd.
func (c *Containerd) CRI() *CRI {
	return &CRI{Crictl: c.opts.Tools.Crictl, Config: filepath.Join(c.Dir, "crictl.yaml")}
}

// Running reports whether the daemon is running.
func (c *Containerd) Running() bool {
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

// Start starts containerd in a new network namespace with only loopback
// up, waits until it serves CRI, and imports the images at the first
// start.
func (c *Containerd) Start(ctx context.Context) error {
	if c.Running() {
		return errors.New("containerd is already running")
	}
	if c.shimSocks == nil && len(c.opts.Enter) > 0 {
		// The namespaces Enter names have their own /run (Cluster): the
		// shims' sockets are not the host's.
		c.shimSocks = map[string]bool{}
	}
	if c.shimSocks == nil {
		c.shimSocks = map[string]bool{}
		for _, d := range []string{"/run/containerd", shimSocketDir} {
			if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
				c.createdRun = append(c.createdRun, d)
			}
		}
		entries, _ := os.ReadDir(shimSocketDir)
		for _, e := range entries {
			c.shimSocks[e.Name()] = true
		}
	}
	logf, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== nrikit e2e: starting containerd at %s\n", time.Now().Format(time.RFC3339Nano))
	// unshare (or Enter's nsenter) execs sh, which execs containerd: the
	// process is containerd.
	prefix := []string{"unshare", "-n", "--"}
	if len(c.opts.Enter) > 0 {
		prefix = c.opts.Enter
	}
	argv := append(append([]string{}, prefix...), "/bin/sh", "-c", `ip link set lo up && exec "$0" --config "$1"`,
		c.opts.Tools.Containerd, c.config)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{
		"PATH=" + filepath.Dir(c.opts.Tools.Shim) + ":" + filepath.Dir(c.opts.Tools.Runc) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()

	cri := c.CRI()
	err = Eventually(ctx, containerdReady, func() error {
		if !c.Running() {
			return Permanent(fmt.Errorf("containerd exited: %s; log tail:\n%s", c.cmd.ProcessState, c.LogTail(30)))
		}
		if _, err := os.Stat(c.NRISocket); err != nil {
			return fmt.Errorf("no NRI socket yet: %w", err)
		}
		_, err := cri.Run(ctx, "version")
		return err
	})
	if err != nil {
		return fmt.Errorf("containerd did not become ready: %w", err)
	}
	if !c.imported {
		for _, tar := range append([]string{c.opts.ImageTar}, c.opts.ExtraImageTars...) {
			out, err := exec.CommandContext(ctx, c.opts.Tools.Ctr, "--address", c.Address, "--namespace", "k8s.io",
				"images", "import", "--platform", "linux/"+goarch(), tar).CombinedOutput()
			if err != nil {
				return fmt.Errorf("ctr images import %s: %w\n%s", tar, err, out)
			}
		}
		c.imported = true
	}
	return nil
}

// Stop stops containerd with SIGTERM (SIGKILL after 20s). Its shims and
// containers keep running, as on a node.
func (c *Containerd) Stop(ctx context.Context) error {
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
	return fmt.Errorf("containerd did not stop on SIGTERM within 20s: killed")
}

// Restart stops and starts containerd with the same configuration and
// state.
func (c *Containerd) Restart(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Pid returns the daemon's process id (0 if it is not running).
func (c *Containerd) Pid() int {
	if !c.Running() {
		return 0
	}
	return c.cmd.Process.Pid
}

// Close removes every pod, stops containerd, kills the shims and
// containers containerd left, unmounts what remains under Dir, removes
// the shims' leftover sockets and, unless keep is set, Dir itself. It
// returns every problem it met.
func (c *Containerd) Close(ctx context.Context, keep bool) error {
	var errs []error
	if c.Running() {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		if _, err := c.CRI().Run(cctx, "rmp", "--all", "--force"); err != nil {
			errs = append(errs, fmt.Errorf("removing pods: %w", err))
		}
		cancel()
	}
	if err := c.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.killLeftovers(ctx)...)
	if err := unmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.removeShimSockets()...)
	if !keep {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killLeftovers kills the containers in this containerd's runc root and
// the shims serving this containerd.
func (c *Containerd) killLeftovers(ctx context.Context) []error {
	var errs []error
	runcRoot := filepath.Join(c.Dir, "runc")
	if entries, err := os.ReadDir(runcRoot); err == nil {
		for _, ns := range entries {
			errs = append(errs, killRuncContainers(ctx, c.opts.Tools.Runc, filepath.Join(runcRoot, ns.Name()))...)
		}
	}
	for _, pid := range shimPids(c.Address) {
		socks := listeningSockets(pid, shimSocketDir+"/")
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Signal(syscall.SIGKILL)
		}
		waitGone(pid, 5*time.Second)
		for _, s := range socks {
			if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// removeShimSockets removes sockets that appeared in shimSocketDir
// since the first start and that nobody listens on, then the
// directories under /run the harness found missing, if empty.
func (c *Containerd) removeShimSockets() []error {
	if len(c.opts.Enter) > 0 {
		return nil
	}
	var errs []error
	entries, _ := os.ReadDir(shimSocketDir)
	for _, e := range entries {
		p := filepath.Join(shimSocketDir, e.Name())
		if c.shimSocks[e.Name()] || e.Type()&os.ModeSocket == 0 || listening(p) {
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(c.createdRun) - 1; i >= 0; i-- {
		_ = os.Remove(c.createdRun[i]) // fails, as it should, if not empty
	}
	return errs
}

// tomlStrings writes ss as a TOML array of strings.
func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
