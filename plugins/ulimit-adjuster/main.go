package ulimitadjuster

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

// Main runs the ulimit-adjuster plugin with command-line arguments args
// (without the program name), logging to stderr, until the runtime shuts
// it down or ctx is done.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	return pluginmain.Main(ctx, pluginmain.Spec{
		Config:  checkConfig,
		Name:    Name,
		Summary: "sets container ulimits requested by pod annotations",
		Setup: func(*flag.FlagSet) pluginmain.NewFunc {
			return func(log *slog.Logger) (any, []stub.Option, error) { return New(log), nil, nil }
		},
	}, args, stderr)
}

// checkConfig checks a configuration file (-config) as Configure does.
func checkConfig(config string) error {
	_, err := ParseConfig(config)
	return err
}
