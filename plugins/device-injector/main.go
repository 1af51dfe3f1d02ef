package deviceinjector

import (
	"context"
	"io"
	"log/slog"

	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
)

// Main runs the device-injector plugin with command-line arguments args
// (without the program name), logging to stderr, until the runtime shuts
// it down or ctx is done.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	return pluginmain.Main(ctx, pluginmain.Spec{
		Config:  pluginmain.ConfigParsedBy(ParseConfig),
		Name:    Name,
		Summary: "injects devices, mounts and CDI devices requested by pod annotations",
		Setup:   pluginmain.NoFlags(func(log *slog.Logger) any { return New(log) }),
	}, args, stderr)
}
