// Package checkcmd is the `check` subcommand of the nri tool: `check plugin`
// and `check runtime` run the conformance checker and print its report;
// `check policy` checks a policy file of plugin grants.
package checkcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/cmd/nri/internal/filearg"
	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/policy"
	"github.com/spf13/cobra"
)

// ErrChecksFailed is returned by the commands when the checker ran and at
// least one check failed; the report has been printed by then.
var ErrChecksFailed = errors.New("conformance checks failed")

// UsageError is a mistake on the command line of a check command (a
// missing COMMAND or --socket, conflicting flags, a bad --output); the nri
// command exits with status 2 for it.
type UsageError struct {
	// Err describes the mistake.
	Err error
}

// Error returns the mistake's description and where to find the usage.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake.
func (e *UsageError) Unwrap() error { return e.Err }

// usagef returns a UsageError of the command cmd.
func usagef(cmd *cobra.Command, format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format+" (see "+cmd.CommandPath()+" --help)", args...)}
}

// New returns the `check` command with its `plugin`, `runtime` and
// `policy` subcommands.
func New() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an NRI plugin or runtime against the protocol",
		Long: `check runs nrikit's conformance checker. "check plugin" plays the runtime for one plugin,
"check runtime" plays a plugin against a runtime's socket. "check policy" checks a policy
file of plugin grants.

Exit status: 0 if every check passed, 6 if at least one failed (the report says which,
with the reason), 3 for an invalid policy file, 2 for a usage error. Results marked INFO are informational (what the
peer did about an nrikit extension or recommendation) and never fail; SKIP marks checks
that do not apply (the connection checks of a WASM plugin).`,
	}
	cmd.AddCommand(newPluginCmd(), newRuntimeCmd(), newPolicyCmd())
	return cmd
}

// outputFlag is the value of --output.
type outputFlag string

func (o outputFlag) validate() error {
	switch o {
	case "text", "json":
		return nil
	}
	return fmt.Errorf("invalid --output %q: want text or json", string(o))
}

func writeReport(w io.Writer, r *conformance.Report, format outputFlag) error {
	var err error
	if format == "json" {
		err = r.WriteJSON(w)
	} else {
		err = r.WriteText(w)
	}
	if err != nil {
		return err
	}
	if r.Failed() {
		return ErrChecksFailed
	}
	return nil
}

// signalContext is the command's context, cancelled on SIGINT and SIGTERM
// so that a launched plugin is stopped.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func newPluginCmd() *cobra.Command {
	var (
		cfg           conformance.PluginConfig
		socket        string
		timeout       time.Duration
		configFile    string
		wasmCacheDir  string
		output        = "text"
		showOutput    bool
		acceptTimeout time.Duration
		policyFile    string
	)
	cmd := &cobra.Command{
		Use:   "plugin [flags] [--] COMMAND [ARG...] | MODULE.wasm",
		Short: "Check an NRI plugin",
		Long: `check plugin launches COMMAND as a runtime launches a pre-installed plugin (the socket
as file descriptor 3, NRI_PLUGIN_SOCKET, NRI_PLUGIN_NAME and NRI_PLUGIN_IDX in its
environment), or with --socket accepts one external plugin on a unix socket, and checks
registration, configuration, the declared scope, Synchronize (single and in parts), every
subscribed event, unsubscribed events, the answers' adjustments, Shutdown and the reaction
to the socket closing.

A plugin that declares a scope (an nrikit extension) has it compiled as nrikit's runtime
compiles it (an invalid scope fails the check, as the runtime refuses the plugin), and is sent
only events about pods and containers in its scope, as nrikit's runtime sends them. A launched
or WASM plugin is then started a second time and configured as a runtime that does not
evaluate scopes (containerd, CRI-O): it must leave the pods and containers outside its scope
unchanged (answer without adjustments, or opt out of them).

A COMMAND that is a WebAssembly module (a file starting with the \0asm magic, whatever its
name and mode) is loaded in-process as a WASM plugin and gets the same checks but those of
the connection (registration, the socket closing), which are reported as SKIP.

The plugin is named as a runtime names the files of its plugin directory: after COMMAND's
file if that is IDX-NAME (50-mine, 50-mine.wasm), else 10-check-target; --name sets it.
With --policy FILE, the checker applies the plugin's grant in that policy file as a runtime
does: its pods are brought into the grant's where, and "answers within its grant" fails
for every change of an answer the grant does not allow (which the runtime would refuse),
naming the rule.

Exit status: 0 if every check passed, 6 if one failed, 2 for a usage error.`,
		Example: "  # nri's flags come before COMMAND: everything from COMMAND on is the plugin's.\n" +
			"  nri check plugin --name 20-logger --verbose ./logger\n" +
			"  nri check plugin --name 20-logger --verbose -- ./logger -log-level debug\n" +
			"  nri check plugin -- node plugins/js-env/plugin.js\n" +
			"  nri check plugin ./10-template.wasm\n" +
			"  nri check plugin --socket /tmp/check.sock --output json",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output).validate(); err != nil {
				return usagef(cmd, "%v", err)
			}
			switch {
			case socket == "" && len(args) == 0:
				return usagef(cmd, "give the plugin's COMMAND, or --socket PATH for an external plugin")
			case socket != "" && len(args) > 0:
				return usagef(cmd, "give either COMMAND or --socket, not both")
			}
			if len(args) > 0 {
				if err := checkCommand(args[0]); err != nil {
					return usagef(cmd, "%v", err)
				}
				warnMisplacedFlags(cmd, args)
			}
			cfg.Command, cfg.Listen = args, socket
			if configFile != "" {
				if cfg.Config != "" {
					return usagef(cmd, "give either --config or --config-file, not both")
				}
				if err := filearg.Check(configFile); err != nil {
					return usagef(cmd, "invalid --config-file %s: %v", configFile, err)
				}
				b, err := os.ReadFile(configFile)
				if err != nil {
					return fmt.Errorf("reading the plugin configuration: %w", err)
				}
				cfg.Config = string(b)
			}
			if timeout > 0 {
				cfg.RegistrationTimeout, cfg.RequestTimeout, cfg.ExitTimeout = timeout, timeout, timeout
			}
			cfg.AcceptTimeout = acceptTimeout
			if policyFile != "" {
				p, err := loadPolicy(policyFile)
				var ue *UsageError
				var pe *policy.Error
				switch {
				case errors.As(err, &ue):
					return usagef(cmd, "invalid --policy %s: %v", policyFile, ue.Err)
				case errors.As(err, &pe):
					return fmt.Errorf("%w --policy %s:\n%v", ErrInvalidPolicy, policyFile, err)
				case err != nil:
					return err
				}
				cfg.Policy = p
			}
			dir, err := wasmhost.ToolCacheDir(wasmCacheDir)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "nri: not using the default WASM compilation cache directory (%v): a WASM plugin is compiled at every check\n", err)
			}
			cfg.WASMCacheDir = dir
			if showOutput {
				cfg.Output = cmd.ErrOrStderr()
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			report, err := conformance.CheckPlugin(ctx, cfg)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), report, outputFlag(output))
		},
	}
	f := cmd.Flags()
	// Everything after COMMAND belongs to the plugin.
	f.SetInterspersed(false)
	f.StringVar(&socket, "socket", "", "accept one external plugin on this unix socket instead of launching COMMAND")
	f.StringVar(&cfg.Name, "name", "", "plugin IDX-NAME (launched: what the plugin is told, default "+conformance.DefaultPluginName+"; external: what it must register as)")
	f.DurationVar(&timeout, "timeout", 0, "bound for registration, each request and the exit (default: registration 5s, request 2s, exit 5s)")
	f.DurationVar(&acceptTimeout, "accept-timeout", conformance.DefaultAcceptTimeout, "with --socket: how long to wait for the plugin to connect")
	f.StringVar(&cfg.Config, "config", "", "configuration string sent to the plugin in Configure")
	f.StringVar(&configFile, "config-file", "", "file whose content is sent to the plugin in Configure")
	f.StringVarP(&output, "output", "o", output, "report format: text or json")
	f.BoolVarP(&showOutput, "verbose", "v", false, "copy the launched plugin's stdout and stderr (a WASM plugin's log) to stderr")
	f.StringVar(&policyFile, "policy", "", "judge each answer against the plugin's grant in this policy file (docs/policy.md) as a runtime with it does: the answers it would refuse fail the check \""+conformance.CheckGrant+"\"")
	f.StringVar(&wasmCacheDir, "wasm-cache-dir", wasmhost.DefaultCacheDir(), `WASM plugin module: keep its compiled code in this directory (the one nri run uses by default; it must be yours and not writable by others), so that the next check loads it in a fraction of a second; "" compiles it at every check`)
	return cmd
}

func newRuntimeCmd() *cobra.Command {
	var (
		cfg    conformance.RuntimeConfig
		crf    criFlags
		socket string
		output = "text"
	)
	cmd := &cobra.Command{
		Use:   "runtime --socket PATH [--cri-socket PATH --image IMAGE]",
		Short: "Check an NRI runtime",
		Long: `check runtime connects to the runtime's NRI socket as external plugins do and checks
what the NRI protocol requires: that it answers RegisterPlugin, configures the plugin with
sane timeouts, synchronizes it, rejects an invalid plugin name with a reason, and refuses a
subscription with unknown event bits (by an error answer or by closing the connection). It
reports, as informational, whether the runtime advertises its supported events and how it
refused the unknown event bits (nrikit's runtime answers RegisterPlugin with the reason;
containerd closes the connection after Configure).

With --cri-socket (the same runtime's CRI socket) and --image (an image already in the
runtime's store: the checker never pulls), it also checks the whole NRI contract through CRI,
as the kubelet drives the runtime: the order and contents of pod and container events, the
runtime's state while the checker's plugin holds a hook, plugin errors, Synchronize, every
adjustable field reaching the container, updates and evictions, an unresponsive plugin, index
order and required plugins (docs/cli.md lists each check and what it needs). Every check runs
its own pods, containers and plugins and removes them when it ends; its plugins leave other
pods alone. Checks needing what the node or image lacks are reported SKIP with the reason.

Exit status: 0 if every check passed, 6 if one failed, 2 for a usage error.`,
		Example: "  nri check runtime --socket /var/run/nri/nri.sock\n" +
			"  nri check runtime --socket /var/run/nri/nri.sock --cri-socket /run/containerd/containerd.sock --image registry.k8s.io/pause:3.10 --output json --junit nri-check.xml",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFlag(output).validate(); err != nil {
				return usagef(cmd, "%v", err)
			}
			if socket == "" {
				return usagef(cmd, "--socket PATH is required")
			}
			if err := crf.validate(); err != nil {
				return usagef(cmd, "%v", err)
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			report, err := conformance.CheckRuntime(ctx, socket, cfg)
			if err != nil {
				return err
			}
			if err := crf.run(ctx, socket, report); err != nil {
				return err
			}
			if err := crf.writeJUnit(report); err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), report, outputFlag(output))
		},
	}
	f := cmd.Flags()
	f.StringVar(&socket, "socket", "", "the runtime's NRI socket (e.g. /var/run/nri/nri.sock)")
	f.StringVar(&cfg.Name, "name", conformance.DefaultRuntimeCheckName, "IDX-NAME the checker registers as")
	f.DurationVar(&cfg.Timeout, "timeout", conformance.DefaultRuntimeCheckTimeout, "bound for each step")
	f.StringVarP(&output, "output", "o", output, "report format: text or json")
	crf.register(cmd)
	return cmd
}

// checkCommand reports, in a sentence for the user, why the plugin's
// COMMAND cannot be run: a file that does not exist, is not executable (and
// not a WASM module), or a name not found in $PATH.
func checkCommand(command string) error {
	if !strings.Contains(command, "/") {
		if _, err := exec.LookPath(command); err != nil {
			return fmt.Errorf("plugin command %q not found in $PATH", command)
		}
		return nil
	}
	info, err := os.Stat(command)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("plugin command %s: no such file", command)
	case err != nil:
		return fmt.Errorf("plugin command %s: %w", command, errors.Unwrap(err))
	case info.IsDir():
		return fmt.Errorf("plugin command %s is a directory", command)
	case info.Mode()&0o111 == 0 && !isWASMModule(command):
		return fmt.Errorf("plugin command %s is neither executable nor a WASM module", command)
	}
	return nil
}

// isWASMModule reports whether path is a WebAssembly module, which is
// loaded rather than run and needs no execute permission.
func isWASMModule(path string) bool {
	ok, err := wasmhost.IsModule(path)
	return ok && err == nil
}

// warnMisplacedFlags tells the user about arguments of the plugin's
// command line that are flags of this command: they go to the plugin
// (flags after COMMAND are the plugin's), which was probably not meant.
func warnMisplacedFlags(cmd *cobra.Command, command []string) {
	for _, a := range command[1:] {
		if a == "--" {
			return
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || cmd.Flags().Lookup(name) == nil {
			continue
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "nri: %s comes after COMMAND, so it is passed to the plugin; "+
			"put it before COMMAND to give it to %s\n", a, cmd.CommandPath())
	}
}
