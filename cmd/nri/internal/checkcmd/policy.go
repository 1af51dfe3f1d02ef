package checkcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/filearg"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/policy"
)

// ErrInvalidPolicy is returned by `check policy` for a policy file with
// mistakes, which it has printed by then, one "FILE:LINE: message" a
// line; the nri command exits with status 3 for it, as for an invalid
// scenario file.
var ErrInvalidPolicy = errors.New("invalid policy file")

func newPolicyCmd() *cobra.Command {
	var pluginDirs []string
	cmd := &cobra.Command{
		Use:   "policy FILE",
		Short: "Check a policy file of plugin grants",
		Long: `check policy decodes and compiles a policy file (the grants of plugins, docs/policy.md) as a
runtime does: unknown and duplicate keys, values of the wrong type, malformed globs and
selectors, unknown enum names, rlimits and namespace types are mistakes, printed one a line
as FILE:LINE: message. A valid file is summarized: the required plugins and each grant with
its plugins, the identity they must have, where and what it allows, in the order plugins are
matched; then a warning, FILE:LINE: warning: message, for every grant or required plugin that
takes any process that can reach the runtime's socket (identity: any).

With --plugin-dir DIR (a runtime's plugin directory, such as /opt/nri/plugins), each plugin
there is listed with the name it registers under and the grant it gets; a grant or required
entry that names a plugin of DIR without the extension its file name gives it is pointed out
(a runtime names 50-batchenv.wasm batchenv.wasm, as upstream NRI does, so a grant for
batchenv is not its).

Exit status: 0 if the file is valid, 3 if it has mistakes, 2 for a usage error (a FILE
or DIR that does not exist or cannot be read included).`,
		Example:      "  nri check policy /etc/nri/policy.yaml\n  nri check policy /etc/nri/policy.yaml --plugin-dir /opt/nri/plugins",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, d := range pluginDirs {
				if info, err := os.Stat(d); err != nil || !info.IsDir() {
					return usagef(cmd, "invalid --plugin-dir %s: not a directory", d)
				}
			}
			if err := checkPolicy(cmd.OutOrStdout(), args[0]); err != nil {
				return err
			}
			p, _ := loadPolicy(args[0])
			for _, d := range pluginDirs {
				if err := listPlugins(cmd.OutOrStdout(), p, d); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&pluginDirs, "plugin-dir", nil, "also list the plugins of this plugin directory with the names they register under and their grants, and point out grants that name one without its file name's extension (repeatable)")
	return cmd
}

// listPlugins lists the plugins a runtime would find in its plugin
// directory dir, each with the name it registers under, its grant under
// p, and the grants and required entries of p that name it without the
// extension its file name gives it.
func listPlugins(w io.Writer, p *policy.Policy, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading the plugin directory: %w", err)
	}
	fmt.Fprintf(w, "plugins of %s:\n", dir)
	for _, e := range entries {
		idx, name, err := api.ParsePluginName(e.Name())
		path := filepath.Join(dir, e.Name())
		info, serr := os.Stat(path)
		if err != nil || serr != nil || !info.Mode().IsRegular() {
			continue // a runtime skips it too
		}
		kind := "executable"
		if wasm, _ := wasmhost.IsModule(path); wasm {
			kind = "WASM module"
		} else if info.Mode()&0o111 == 0 {
			continue // neither: a runtime skips it
		}
		fmt.Fprintf(w, "  %s (%s) registers as %s: %s\n", e.Name(), kind, api.FullPluginName(idx, name), p.GrantFor(idx, name))
		for _, n := range p.NamedWithoutExtension(idx, name) {
			fmt.Fprintf(w, "    warning: %s, not %s: a plugin is named after its file, extension included\n", n, name)
		}
	}
	return nil
}

// checkPolicy checks the policy file at path and prints the summary or
// the mistakes to w.
func checkPolicy(w io.Writer, path string) error {
	p, err := loadPolicy(path)
	var pe *policy.Error
	if errors.As(err, &pe) {
		n := strings.Count(err.Error(), "\n") + 1
		fmt.Fprintln(w, err)
		return fmt.Errorf("%w %s: %d %s", ErrInvalidPolicy, path, n, plural(n, "mistake"))
	}
	if err != nil {
		return err
	}
	grants := p.Grants()
	fmt.Fprintf(w, "%s: valid: %d %s and the default\n", path, len(grants)-1, plural(len(grants)-1, "grant"))
	if req := p.RequiredSummary(); len(req) > 0 {
		fmt.Fprintf(w, "required: %s\n", strings.Join(req, ", "))
	}
	for _, g := range grants {
		fmt.Fprintln(w, g.Summary())
	}
	for _, warn := range p.Warnings() {
		fmt.Fprintf(w, "%s:%d: warning: %s\n", warn.File, warn.Line, warn.Msg)
	}
	if err := policy.CheckTrusted(path); err != nil {
		fmt.Fprintf(w, "note: a runtime would refuse this file: %v\n", err)
	}
	return nil
}

// loadPolicy reads and compiles the policy file at path as a runtime
// does, CEL included; a file that is missing or unreadable is a
// *UsageError, a file with mistakes a *policy.Error (joined).
func loadPolicy(path string) (*policy.Policy, error) {
	if err := filearg.Check(path); err != nil {
		return nil, &UsageError{Err: fmt.Errorf("policy file %s: %w", path, err)}
	}
	return policy.LoadUntrusted(path, policy.WithFilterOptions(filter.WithCEL(celscope.Compile)))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
