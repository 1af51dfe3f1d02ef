// Package recorder is the NRI plugin behind `nri record`: it records a
// node's NRI traffic into a file (docs/record.md) for `nri replay`. It
// subscribes to every event, at the index it is given (the last, 99,
// by default: it changes nothing, and on nrikit's runtime it then sees
// what every other plugin did), answers every request at once without a
// change or an error, and writes on its own goroutine: a full queue
// drops records (counted in the file), never holds up the runtime.
//
// The recording holds the Synchronize snapshot, every event with its pod
// and container as the runtime sent them, and what the runtime reports
// back (PostCreateContainer's container, with every plugin's adjustment;
// ValidateContainerAdjustment's proposed container, combined adjustment
// and owners). Values of environment variables and annotations are
// redacted with a keyed hash (package record) unless kept on request;
// the key stays on the node (-key-file).
package recorder

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
	"github.com/nrikit/nrikit/stub"
)

// Name is the plugin's default name.
const Name = "recorder"

// DefaultIndex is the index `nri record` registers with by default.
const DefaultIndex = "99"

// Main runs the recorder with command-line arguments args (without the
// program name), logging to stderr, until the runtime shuts it down or
// ctx is done; the recording is then closed.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var rec *Plugin
	defer func() {
		if rec != nil {
			rec.close()
		}
	}()
	return pluginmain.Main(ctx, pluginmain.Spec{
		Config:  func(text string) error { _, err := record.ParseConfig("configuration", text); return err },
		Name:    Name,
		Summary: "records the node's NRI traffic to a file for nri replay (changes nothing)",
		Setup: func(fs *flag.FlagSet) pluginmain.NewFunc {
			var flags record.Config
			var redact bool
			fs.StringVar(&flags.Path, "out", "", "write the recording to this file (default "+record.DefaultPath+")")
			fs.Int64Var(&flags.MaxFileSize, "max-file-size", 0, "rotate the file past this many compressed bytes (default 64 MiB)")
			fs.IntVar(&flags.MaxFiles, "max-files", 0, "keep this many files, the current one included (default 4)")
			fs.StringVar(&flags.KeyFile, "key-file", "", "the redaction key (created 0600 if missing; default the recording's path with "+record.KeySuffix+")")
			fs.BoolVar(&redact, "redact", true, "redact the values of environment variables and annotations (-redact=false keeps them in clear)")
			fs.Func("keep-env", "keep the values of the variables matching this pattern in clear (repeatable)", func(v string) error {
				flags.KeepEnv = append(flags.KeepEnv, v)
				return nil
			})
			fs.Func("keep-annotation", "keep the values of the annotations matching this pattern in clear (repeatable)", func(v string) error {
				flags.KeepAnnotations = append(flags.KeepAnnotations, v)
				return nil
			})
			return func(log *slog.Logger) (any, []stub.Option, error) {
				cfg, err := fileConfig(fs)
				if err != nil {
					return nil, nil, err
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				override(&cfg, flags, set, redact)
				p, err := New(cfg, log)
				if err != nil {
					return nil, nil, err
				}
				rec = p
				// On nrikit's runtime, no event waits for the recorder.
				return p, []stub.Option{stub.WithObserveOnly()}, nil
			}
		},
	}, withDefaultIndex(args), stderr)
}

// withDefaultIndex adds -idx DefaultIndex unless the arguments or the
// environment (a runtime that launched the plugin) give one.
func withDefaultIndex(args []string) []string {
	if os.Getenv("NRI_PLUGIN_IDX") != "" {
		return args
	}
	for _, a := range args {
		if a == "-idx" || a == "--idx" || strings.HasPrefix(a, "-idx=") || strings.HasPrefix(a, "--idx=") {
			return args
		}
	}
	return append([]string{"-idx", DefaultIndex}, args...)
}

// fileConfig reads the -config file, if one was given (pluginmain has
// checked it).
func fileConfig(fs *flag.FlagSet) (record.Config, error) {
	f := fs.Lookup("config")
	if f == nil || f.Value.String() == "" {
		return record.Config{}, nil
	}
	data, err := os.ReadFile(f.Value.String())
	if err != nil {
		return record.Config{}, fmt.Errorf("-config: %w", err)
	}
	return record.ParseConfig(f.Value.String(), string(data))
}

// override sets in c what the flags given set.
func override(c *record.Config, f record.Config, set map[string]bool, redact bool) {
	if set["out"] {
		c.Path = f.Path
	}
	if set["max-file-size"] {
		c.MaxFileSize = f.MaxFileSize
	}
	if set["max-files"] {
		c.MaxFiles = f.MaxFiles
	}
	if set["key-file"] {
		c.KeyFile = f.KeyFile
	}
	if set["redact"] {
		c.Redact = &redact
	}
	c.KeepEnv = append(c.KeepEnv, f.KeepEnv...)
	c.KeepAnnotations = append(c.KeepAnnotations, f.KeepAnnotations...)
}

// Plugin is the recorder: record.Recorder's handlers, closed when the
// plugin stops.
type Plugin struct {
	*record.Recorder
	cfg record.Config
	log *slog.Logger

	// redaction loads the key once, at the first Configure.
	redaction sync.Once
	keyErr    error
}

// New returns the recorder for cfg and starts its writer. Nothing is
// written, and the redaction key is not read, until a runtime configures
// the plugin: a recording's directory that is missing fails the
// registration, with the reason.
func New(cfg record.Config, log *slog.Logger) (*Plugin, error) {
	rec, err := cfg.Recorder(&recordpb.Header{Source: record.SourcePlugin, Node: nodeName(), Recorder: Name}, log)
	if err != nil {
		return nil, err
	}
	return &Plugin{Recorder: rec, cfg: cfg, log: log}, nil
}

// NodeEnv names the variable giving the node's name for the recording's
// header (a DaemonSet sets it from spec.nodeName); without it, the host
// name.
const NodeEnv = "NODE_NAME"

func nodeName() string {
	if n := os.Getenv(NodeEnv); n != "" {
		return n
	}
	host, _ := os.Hostname()
	return host
}

// Configure loads the redaction key (the first time) and starts the
// recording's file for the runtime.
func (p *Plugin) Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error) {
	p.redaction.Do(func() {
		var red *record.Redactor
		if red, p.keyErr = p.cfg.Redactor(); p.keyErr == nil {
			p.Recorder.SetRedactor(red)
			p.log.Info("recording", "path", cmp.Or(p.cfg.Path, record.DefaultPath), "redacted", red != nil)
		}
	})
	if p.keyErr != nil {
		return 0, fmt.Errorf("cannot record: %w", p.keyErr)
	}
	if _, err := p.Recorder.Configure(ctx, config, runtime, version); err != nil {
		return 0, err
	}
	return record.Subscription(stub.SupportedEvents(ctx)), nil
}

// close writes what is queued and closes the recording (Main does when
// the plugin stops).
func (p *Plugin) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Recorder.Close(ctx); err != nil {
		p.log.Error("closing the recording", "error", err)
		return
	}
	s := p.Recorder.Stats()
	p.log.Info("recording closed", "records", s.Records, "bytes", s.Bytes, "dropped", s.Dropped)
}
