package hookinjector

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

// Main runs the hook-injector plugin with command-line arguments args
// (without the program name), logging to stderr, until the runtime shuts
// it down or ctx is done.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	return pluginmain.Main(ctx, pluginmain.Spec{
		Config:  pluginmain.ConfigParsedBy(ParseConfig),
		Name:    Name,
		Summary: "injects OCI hooks from hooks.d directories (podman/CRI-O format)",
		Setup: func(fs *flag.FlagSet) pluginmain.NewFunc {
			var dirs []string
			fs.Func("hooks-dir", "directory of hook JSON files (repeatable; default "+
				"/usr/share/containers/oci/hooks.d and /etc/containers/oci/hooks.d)", func(v string) error {
				dirs = append(dirs, v)
				return nil
			})
			return func(log *slog.Logger) (any, []stub.Option, error) { return New(log, dirs), nil, nil }
		},
	}, args, stderr)
}
