package checkcmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/cmd/nri/internal/filearg"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/policy"
)

// ErrInvalidPolicy is returned by `check policy` for a policy file with
// mistakes, which it has printed by then, one "FILE:LINE: message" a
// line; the nri command exits with status 3 for it, as for an invalid
// scenario file.
var ErrInvalidPolicy = errors.New("invalid policy file")

func newPolicyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "policy FILE",
		Short: "Check a policy file of plugin grants",
		Long: `check policy decodes and compiles a policy file (the grants of plugins, docs/policy.md) as a
runtime does: unknown and duplicate keys, values of the wrong type, malformed globs and
selectors, unknown enum names, rlimits and namespace types are mistakes, printed one a line
as FILE:LINE: message. A valid file is summarized: the required plugins and each grant with
its plugins, where and what it allows, in the order plugins are matched.

Exit status: 0 if the file is valid, 3 if it has mistakes, 2 for a usage error (a FILE
that does not exist or cannot be read included).`,
		Example:      "  nri check policy /etc/nri/policy.yaml",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return checkPolicy(cmd.OutOrStdout(), args[0])
		},
	}
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
	if req := p.Required(); len(req) > 0 {
		fmt.Fprintf(w, "required: %s\n", strings.Join(req, ", "))
	}
	for _, g := range grants {
		fmt.Fprintln(w, g.Summary())
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
