package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/simulator"
	"github.com/nrikit/nrikit/plugins/recorder"
	"github.com/nrikit/nrikit/record"
)

// exitDiffers is the status of `nri replay` when some container would
// differ.
const exitDiffers = 1

func newRecordCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "record [RECORDER FLAGS]",
		Short: "Record a node's NRI traffic to a file, as an NRI plugin (nri plugin recorder)",
		Long: `Run the recorder plugin against a runtime's socket: it registers at index 99 (the
last; -idx changes it), subscribes to every event (CreateContainer only where the runtime has
no validation to tell the same), changes nothing and never fails a request, and writes the
Synchronize snapshot, every event with its pod and container, and what the runtime reports
back (the validation request with the combined adjustment, the created container) to -out
(default ` + record.DefaultPath + `), compressed, created 0600, rotated past -max-file-size.
It declares itself an observer: nrikit's runtime does not wait for it; containerd and CRI-O
as released call it as any plugin. Values of environment variables and annotations are
redacted with a keyed hash; the key (-key-file, created 0600) stays on the node, beside the
recording by default, where nri replay finds it. See docs/record.md. Run 'nri record -help'
for the flags.`,
		Example:            `  nri record -socket /var/run/nri/nri.sock -out /var/lib/nri-record/node.nrirec`,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			err := recorder.Main(c.Context(), args, g.stderr)
			if code := pluginExitCode(err, g.stderr); code != 0 {
				return withCode(code, fmt.Errorf("record: %w", errReported))
			}
			return nil
		},
	}
}

func newReplayCommand(g *globals) *cobra.Command {
	var (
		f, base     runtimeFlags
		timing      string
		keyFile     string
		all         bool
		timeout     time.Duration
		compareBase bool
	)
	c := &cobra.Command{
		Use:   "replay FILE...",
		Short: "Replay a recorded node through plugins and show which containers would differ",
		Long: `Play a recording (nri record, or a recording runtime; docs/record.md) through the
simulated runtime with the plugins of --plugin and --plugin-dir (executables and WASM modules)
under --policy, in the recorded order, and compare every container the recording creates with
what the node got: the fields that would differ, and the creations that would fail or succeed.
With --base-plugin, --base-plugin-dir or --base-policy, compare with that plugin set replayed
on the same traffic instead (old build against new, old configuration against new, policy
against none). A rotated recording is read oldest file first from its current file's name.

Exit status: 0 if no container would differ, 1 if some would, 4 if a plugin did not register,
2 for a usage error, 5 for another failure.`,
		Example: `  # A simulated node, recorded, then replayed through gpu-env as it was.
  nri run cmd/nri/examples/gpu-node.yaml --record run.nrirec --record-config cmd/nri/examples/record/record.yaml
  nri replay run.nrirec --plugin ./50-gpu-env

  # A node's recording, through a new build against the plugins as they are.
  nri replay /var/lib/nri-record/node.nrirec --plugin-dir ./next --base-plugin-dir ./current`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			base.output, base.reqTimeout, base.wasmCacheDir = f.output, f.reqTimeout, f.wasmCacheDir
			compareBase = len(base.plugins)+len(base.pluginDirs) > 0 || base.policy != ""
			for _, fl := range []*runtimeFlags{&f, &base} {
				if err := fl.check(); err != nil {
					return err
				}
			}
			if timing != "compressed" && timing != "recorded" {
				return codef(exitUsage, "invalid --timing %q: want compressed or recorded", timing)
			}
			rec, err := record.Load(args...)
			if err != nil {
				return withCode(exitFailure, err)
			}
			cmp := &simulator.Comparer{Redacted: rec.Header.GetRedaction().GetEnabled()}
			var keyWarning string
			switch {
			case keyFile != "":
				if cmp.Redactor, err = replayRedactor(keyFile, rec); err != nil {
					return codef(exitUsage, "--key-file: %v", err)
				}
			case cmp.Redacted:
				// The recorder's default key, beside the recording.
				if def := args[0] + record.KeySuffix; fileExists(def) {
					if cmp.Redactor, err = replayRedactor(def, rec); err != nil {
						keyWarning = fmt.Sprintf("%s, beside the recording, not used: %v", def, err)
					}
				}
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			r := &report.Replay{Recording: rec.Files, Source: rec.Header.GetSource(), Node: rec.Header.GetNode(),
				Runtime: rec.Header.GetRuntimeName() + " " + rec.Header.GetRuntimeVersion(), Against: "node", Warnings: rec.Warnings}
			if keyWarning != "" {
				r.Warnings = append(r.Warnings, keyWarning)
			}
			got, err := replaySet(ctx, g, &f, rec, timing == "recorded", r, false)
			if err != nil {
				return err
			}
			idx := simulator.IndexRecording(rec)
			cmp.Names = func(id string) string { return idx.Names[id] }
			if compareBase {
				r.Against = "base"
				old, err := replaySet(ctx, g, &base, rec, timing == "recorded", r, true)
				if err != nil {
					return err
				}
				r.Containers = cmp.WithBase(idx, got, old)
			} else {
				r.Containers = cmp.WithNode(idx, got)
			}
			r.Warnings = append(r.Warnings, cmp.Warnings()...)
			r.Tally()
			if f.output == "json" {
				err = r.WriteJSON(g.stdout)
			} else {
				err = r.WriteText(g.stdout, all)
			}
			if errors.Is(err, syscall.EPIPE) {
				return withCode(exitBrokenPipe, fmt.Errorf("writing the report: %w", errReported))
			}
			if err != nil {
				return err
			}
			switch {
			case len(r.RegistrationErrors) > 0:
				return codef(exitPlugins, "%d plugin(s) did not register: %w", len(r.RegistrationErrors), errReported)
			case r.Summary.Differ+r.Summary.ChangesDiffer > 0:
				return codef(exitDiffers, "%d container(s) and %d update(s) or stop(s) would differ: %w",
					r.Summary.Differ, r.Summary.ChangesDiffer, errReported)
			}
			return nil
		},
	}
	f.register(c)
	fl := c.Flags()
	// A replay's report has no timeline of calls.
	_ = fl.MarkHidden("calls")
	fl.StringArrayVar(&base.plugins, "base-plugin", nil, "compare with this plugin set instead of the node: a plugin of it (repeatable)")
	fl.StringArrayVar(&base.pluginDirs, "base-plugin-dir", nil, "compare with the plugins of this directory (repeatable)")
	fl.StringVar(&base.policy, "base-policy", "", "compare with the plugin set under this policy file")
	fl.StringVar(&timing, "timing", "compressed", "compressed: play the events one after the other; recorded: keep the recorded gaps between them")
	fl.StringVar(&keyFile, "key-file", "", "the recording's redaction key (on the recorded node): compare the values plugins set with the redacted ones (default: FILE"+record.KeySuffix+" if it is there)")
	fl.BoolVar(&all, "all", false, "list every container in the text output, also those that would not differ")
	fl.DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	return c
}

// replaySet replays the recording with one plugin set and adds its plugins
// and registration errors to the report.
func replaySet(ctx context.Context, g *globals, f *runtimeFlags, rec *record.Recording, recorded bool, r *report.Replay, isBase bool) (got *simulator.Outcome, err error) {
	opts, err := f.simulatorOptions(g)
	if err != nil {
		return nil, err
	}
	sim, err := simulator.NewReplay(rec, opts...)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stop(sim.Simulator)) }()
	if err := sim.Start(ctx); err != nil {
		return nil, startError(err)
	}
	got, err = sim.Replay(ctx, recorded)
	if err != nil {
		return nil, fmt.Errorf("replaying: %w", err)
	}
	plugins, regErrs := sim.PluginReport()
	if isBase {
		r.BasePlugins = plugins
	} else {
		r.Plugins = plugins
		r.Summary.Events = got.Events
		r.Summary.Existing = sim.Existing()
		r.Summary.Pods = countPods(rec)
	}
	r.RegistrationErrors = append(r.RegistrationErrors, regErrs...)
	return got, nil
}

// countPods counts the pods the recording creates.
func countPods(rec *record.Recording) int {
	n := 0
	for _, e := range rec.Entries {
		if e.GetEvent().Name() == "RunPodSandbox" && e.Message != nil {
			n++
		}
	}
	return n
}

// replayRedactor loads the recording's key and checks it is the one the
// recording was made with.
func replayRedactor(path string, rec *record.Recording) (*record.Redactor, error) {
	red := rec.Header.GetRedaction()
	if !red.GetEnabled() {
		return nil, errors.New("the recording is not redacted")
	}
	key, err := record.ReadKey(path)
	if err != nil {
		return nil, err
	}
	r, err := record.NewRedactor(key, red.GetKeepEnv(), red.GetKeepAnnotations())
	if err != nil {
		return nil, err
	}
	if string(r.KeyID()) != string(red.GetKeyId()) {
		return nil, fmt.Errorf("%s is not the key the recording was made with", path)
	}
	return r, nil
}

// fileExists reports whether path names a regular file.
func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
