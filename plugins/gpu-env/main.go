package gpuenv

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

// Main runs the gpu-env plugin with command-line arguments args (without
// the program name), logging to stderr, until the runtime shuts it down
// or ctx is done.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	return pluginmain.Main(ctx, pluginmain.Spec{
		Config:  pluginmain.ConfigParsedBy(ParseConfig),
		Name:    Name,
		Summary: "sets GPU environment variables in the containers of GPU pods (scope: accel=gpu)",
		Scope:   DefaultScope(),
		Setup: func(fs *flag.FlagSet) pluginmain.NewFunc {
			var env map[string]string
			fs.Func("env", "KEY=VALUE to set instead of the defaults (repeatable)", func(v string) error {
				k, val, ok := strings.Cut(v, "=")
				if !ok || k == "" {
					return fmt.Errorf("want KEY=VALUE, got %q", v)
				}
				if env == nil {
					env = map[string]string{}
				}
				env[k] = val
				return nil
			})
			return func(log *slog.Logger) (any, []stub.Option, error) {
				return New(log, env), nil, nil
			}
		},
	}, args, stderr)
}
