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

// Options configure a containerd instance.
type Options struct {
	// Tools are the binaries to run.
	Tools *Tools
	// ImageTar is the OCI layout tarball imported at the first start
	// (WriteImages); it must hold PauseImage.
	ImageTar string
	// DefaultValidator, if not empty, is the body of the TOML table
	// [plugins."io.containerd.nri.v1.nri".default_validator], e.g.
	// "enable = true\nreject_oci_hook_adjustment = true".
	DefaultValidator string
	// RequestTimeout is NRI's plugin_request_timeout (default 2s).
	RequestTimeout time.Duration
	// ExtraImageTars are more image tarballs imported at the first start
	// (such as a plugin image of `make images`).
	ExtraImageTars []string
}

// Containerd is one containerd daemon with a private root, state,
// sockets and NRI directories under Dir. Create it with New, add
// pre-installed plugins to PluginDir and their configuration to
// PluginConfigDir, then Start it. Close stops it and everything it
// started.
type Containerd struct {
	// Dir is the private directory; the paths below are inside it.
	Dir string
	// Address is containerd's gRPC socket (the CRI endpoint).
	Address string
	// NRISocket is the socket external NRI plugins connect to.
	NRISocket string
	// PluginDir is NRI's plugin_path: executables named IDX-NAME that
	// containerd starts when it starts.
	PluginDir string
	// PluginConfigDir is NRI's plugin_config_path: IDX-NAME.conf or
	// NAME.conf, sent to pre-installed plugins in Configure.
	PluginConfigDir string
	// CDIDir is containerd's only CDI spec directory.
	CDIDir string
	// LogPath is containerd's log (stdout and stderr, debug level),
	// appended to across restarts.
	LogPath string

	opts       Options
	config     string
	cmd        *exec.Cmd
	exited     chan struct{}
	imported   bool
	shimSocks  map[string]bool // entries of /run/containerd/s before the first start
	createdRun []string        // directories under /run the harness found missing
}

// shimSocketDir is where containerd's runc shim puts its sockets,
// whatever containerd's configuration says.
const shimSocketDir = "/run/containerd/s"

// New prepares a containerd instance in a new directory under parent
// (os.TempDir if empty) without starting it. The path is kept short:
// unix socket paths are limited to 107 bytes.
func New(parent string, opts Options) (*Containerd, error) {
	dir, err := os.MkdirTemp(parent, "nrikit-e2e-")
	if err != nil {
		return nil, err
	}
	c := &Containerd{
		Dir:             dir,
		Address:         filepath.Join(dir, "containerd.sock"),
		NRISocket:       filepath.Join(dir, "run", "nri.sock"),
		PluginDir:       filepath.Join(dir, "nri-plugins"),
		PluginConfigDir: filepath.Join(dir, "nri-conf.d"),
		CDIDir:          filepath.Join(dir, "cdi"),
		LogPath:         filepath.Join(dir, "containerd.log"),
		config:          filepath.Join(dir, "config.toml"),
		opts:            opts,
	}
	for _, d := range []string{"root", "state", "run", "runc", "certs.d", "cni/bin", "cni/net.d", "pods", "nri-plugins", "nri-conf.d", "cdi"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(c.config, []byte(c.configTOML()), 0o644); err != nil {
		return nil, err
	}
	crictl := fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 30\ndebug: false\npull-image-on-create: false\n", c.Address, c.Address)
	if err := os.WriteFile(filepath.Join(dir, "crictl.yaml"), []byte(crictl), 0o644); err != nil {
		return nil, err
	}
	return c, nil
}

// configTOML is the configuration of /work/shared/real-containerd's
// config.toml.in (checked on this kind of machine) with the harness's
// options.
func (c *Containerd) configTOML() string {
	timeout := c.opts.RequestTimeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	validator := ""
	if c.opts.DefaultValidator != "" {
		validator = "\n  [plugins.\"io.containerd.nri.v1.nri\".default_validator]\n" + c.opts.DefaultValidator + "\n"
	}
	r := strings.NewReplacer("@RC@", c.Dir, "@RUNC@", c.opts.Tools.Runc, "@TIMEOUT@", timeout.String(),
		"@PAUSE@", PauseImage, "@VALIDATOR@", validator)
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
      bin_dirs = ["@RC@/cni/bin"]
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
	// unshare execs sh, which execs containerd: the process is containerd.
	cmd := exec.Command("unshare", "-n", "--", "/bin/sh", "-c", `ip link set lo up && exec "$0" --config "$1"`,
		c.opts.Tools.Containerd, c.config)
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
	err = Eventually(ctx, 30*time.Second, func() error {
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

// Log returns containerd's log so far.
func (c *Containerd) Log() string {
	b, _ := os.ReadFile(c.LogPath)
	return string(b)
}

// LogTail returns the last n lines of containerd's log.
func (c *Containerd) LogTail(n int) string {
	return tail(c.Log(), n)
}

// WaitLog waits until containerd's log holds substr at least n times.
func (c *Containerd) WaitLog(ctx context.Context, timeout time.Duration, substr string, n int) error {
	return Eventually(ctx, timeout, func() error {
		if got := strings.Count(c.Log(), substr); got < n {
			return fmt.Errorf("containerd's log has %q %d times, want %d", substr, got, n)
		}
		return nil
	})
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
			root := filepath.Join(runcRoot, ns.Name())
			out, err := exec.CommandContext(ctx, c.opts.Tools.Runc, "--root", root, "list", "-q").Output()
			if err != nil {
				continue
			}
			for _, id := range strings.Fields(string(out)) {
				_ = exec.CommandContext(ctx, c.opts.Tools.Runc, "--root", root, "kill", "--all", id, "KILL").Run()
				if out, err := exec.CommandContext(ctx, c.opts.Tools.Runc, "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("runc delete %s: %v: %s", id, err, out))
				}
			}
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

// configHeader marks the harness's configuration file, so that
// SweepStale touches only the harness's directories.
const configHeader = "# Written by nrikit's e2e harness."

// SweepStale cleans up after earlier runs that died without cleaning up
// (a killed test binary, a test timeout): in every directory of the
// harness under parent (os.TempDir if empty) whose containerd is not
// serving, it kills the containers and shims left, unmounts what is
// mounted under it, and removes it. It returns the directories removed.
func SweepStale(ctx context.Context, parent string, tools *Tools) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(parent, "nrikit-e2e-*"))
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	for _, dir := range dirs {
		if pid, ok := strings.CutPrefix(filepath.Base(dir), "nrikit-e2e-build-"); ok {
			// A suite's build directory, named after its process.
			if n, err := strconv.Atoi(pid); err == nil && !Alive(n) {
				if err := os.RemoveAll(dir); err != nil {
					errs = append(errs, err)
				}
				swept = append(swept, dir)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "config.toml"))
		if err != nil || !strings.HasPrefix(string(b), configHeader) || listening(filepath.Join(dir, "containerd.sock")) {
			continue
		}
		c := &Containerd{Dir: dir, Address: filepath.Join(dir, "containerd.sock"), opts: Options{Tools: tools}}
		errs = append(errs, c.killLeftovers(ctx)...)
		if err := unmountUnder(dir); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		swept = append(swept, dir)
	}
	if len(swept) > 0 {
		// Removed only if empty: a running containerd keeps its sockets there.
		_ = os.Remove(shimSocketDir)
		_ = os.Remove(filepath.Dir(shimSocketDir))
	}
	return swept, errors.Join(errs...)
}
