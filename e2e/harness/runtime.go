package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Runtime is a container runtime under test with NRI enabled: containerd
// ([Containerd]) or CRI-O ([Crio]). Create it with [NewContainerd] or
// [NewCrio], add pre-installed plugins to its Layout's PluginDir, then
// Start it. Close stops it and everything it started.
type Runtime interface {
	// Kind names the runtime in messages: "containerd" or "CRI-O".
	Kind() string
	// Paths returns where the runtime's sockets, directories and log are.
	Paths() *Layout
	// Start starts the runtime in a new network namespace with only
	// loopback up and waits until it serves CRI and NRI. The first start
	// loads the images of Options.
	Start(ctx context.Context) error
	// Stop stops the runtime (SIGTERM, SIGKILL after 20s); its containers
	// keep running, as on a node.
	Stop(ctx context.Context) error
	// Restart stops and starts the runtime with the same state.
	Restart(ctx context.Context) error
	// Running reports whether the daemon runs.
	Running() bool
	// Pid returns the daemon's process id (0 if it is not running).
	Pid() int
	// CRI returns a crictl client of the runtime.
	CRI() *CRI
	// Close removes every pod, stops the runtime, kills what it left,
	// unmounts what remains under its directory and, unless keep is set,
	// removes the directory. It returns every problem it met.
	Close(ctx context.Context, keep bool) error
}

// Options configure a runtime instance.
type Options struct {
	// Tools are the binaries to run: containerd's for [NewContainerd],
	// CRI-O's (Tools.Crio) for [NewCrio], crictl and runc for both.
	Tools *Tools
	// ImageTar is the OCI layout tarball loaded at the first start
	// (WriteImages); it must hold PauseImage.
	ImageTar string
	// ExtraImageTars are more image tarballs loaded at the first start
	// (such as a plugin image of `make images`).
	ExtraImageTars []string
	// DefaultValidator, if not nil, enables the runtime's built-in
	// default validator with this configuration.
	DefaultValidator *Validator
	// RequestTimeout is NRI's plugin request timeout (default 2s).
	RequestTimeout time.Duration
	// PodNetwork gives pods that ask for their own network namespace a
	// CNI network (a bridge with host-local addresses, inside the
	// runtime's private network namespace, Debian's CNI plugins), as
	// CRI-O's own NRI suite and a kubelet's pods need; the suite's pods
	// share the runtime's network namespace and need none.
	PodNetwork bool
	// Enter, if set, is the command prefix that runs containerd inside
	// an existing network and mount namespace (nsenter -t PID -n -m --),
	// instead of a new network namespace of its own (unshare -n).
	Enter []string
}

// Validator is the configuration of the default validator a runtime
// embeds with NRI (containerd's default_validator table, CRI-O's
// [crio.nri.default_validator]).
type Validator struct {
	// RejectOCIHooks refuses containers a plugin adds OCI hooks to.
	RejectOCIHooks bool
	// RequiredPlugins must have answered for a container to be created.
	RequiredPlugins []string
	// TolerateMissingAnnotation is the pod annotation with which a pod's
	// containers are created without the required plugins (empty: none).
	TolerateMissingAnnotation string
}

// Layout is where a runtime instance keeps its files: everything lives in
// Dir, a private directory.
type Layout struct {
	// Dir is the private directory; the paths below are inside it.
	Dir string
	// Address is the runtime's CRI socket.
	Address string
	// NRISocket is the socket external NRI plugins connect to.
	NRISocket string
	// PluginDir holds the pre-installed plugins: executables named
	// IDX-NAME that the runtime starts when it starts.
	PluginDir string
	// PluginConfigDir holds their configuration: IDX-NAME.conf or
	// NAME.conf, sent to pre-installed plugins in Configure.
	PluginConfigDir string
	// CDIDir is the runtime's only CDI spec directory.
	CDIDir string
	// LogPath is the runtime's log (stdout and stderr), appended to
	// across restarts.
	LogPath string
}

// PolicyPath is where a runtime on nrikit's compat/nri reads the node's
// policy (docs/policy.md): policy.yaml in the parent directory of the
// plugin configuration directory.
func (l *Layout) PolicyPath() string {
	return filepath.Join(filepath.Dir(l.PluginConfigDir), "policy.yaml")
}

// Log returns the runtime's log so far.
func (l *Layout) Log() string {
	b, _ := os.ReadFile(l.LogPath)
	return string(b)
}

// LogTail returns the last n lines of the runtime's log.
func (l *Layout) LogTail(n int) string {
	return tail(l.Log(), n)
}

// WaitLog waits until the runtime's log holds substr at least n times.
func (l *Layout) WaitLog(ctx context.Context, timeout time.Duration, substr string, n int) error {
	return Eventually(ctx, timeout, func() error {
		if got := strings.Count(l.Log(), substr); got < n {
			return fmt.Errorf("the runtime's log has %q %d times, want %d", substr, got, n)
		}
		return nil
	})
}

// newLayout makes a new private directory under parent (os.TempDir if
// empty) with the subdirectories every runtime uses, and more. The path
// is kept short: unix socket paths are limited to 107 bytes.
func newLayout(parent, daemonLog string, more ...string) (*Layout, error) {
	dir, err := os.MkdirTemp(parent, "nrikit-e2e-")
	if err != nil {
		return nil, err
	}
	l := &Layout{
		Dir:             dir,
		NRISocket:       filepath.Join(dir, "run", "nri.sock"),
		PluginDir:       filepath.Join(dir, "nri-plugins"),
		PluginConfigDir: filepath.Join(dir, "nri-conf.d"),
		CDIDir:          filepath.Join(dir, "cdi"),
		LogPath:         filepath.Join(dir, daemonLog),
	}
	for _, d := range append([]string{"run", "nri-plugins", "nri-conf.d", "cdi", "pods"}, more...) {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// crictlTimeout bounds each crictl command: the kubelet's default CRI
// request timeout (--runtime-request-timeout, 2 minutes), not crictl's
// 30 seconds, which a pod's creation beside two CPU hogs has taken. A
// hang still ends, at this bound or at the test's deadline.
const crictlTimeout = 2 * time.Minute

// writeCrictlConfig writes crictl's configuration for the CRI socket at
// l.Address into l.Dir.
func (l *Layout) writeCrictlConfig() error {
	crictl := fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: %d\ndebug: false\npull-image-on-create: false\n",
		l.Address, l.Address, int(crictlTimeout.Seconds()))
	return os.WriteFile(filepath.Join(l.Dir, "crictl.yaml"), []byte(crictl), 0o644)
}

// requestTimeout is o's request timeout, 2s by default.
func (o Options) requestTimeout() time.Duration {
	if o.RequestTimeout == 0 {
		return 2 * time.Second
	}
	return o.RequestTimeout
}
