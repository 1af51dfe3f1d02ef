package logger

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

// Main runs the logger plugin with command-line arguments args (without
// the program name), logging to stderr, until the runtime shuts it down
// or ctx is done.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	return pluginmain.Main(ctx, pluginmain.Spec{
		Config:  pluginmain.ConfigParsedBy(ParseConfig),
		Name:    Name,
		Summary: "logs the NRI events it receives",
		Setup: func(fs *flag.FlagSet) pluginmain.NewFunc {
			events := fs.String("events", "all", `events to log: "all", "pod", "container" or names such as CreateContainer,StopContainer`)
			return func(log *slog.Logger) (any, []stub.Option, error) {
				m, err := api.ParseEventMask(*events)
				if err != nil {
					return nil, nil, err
				}
				return New(log, m), nil, nil
			}
		},
	}, args, stderr)
}
