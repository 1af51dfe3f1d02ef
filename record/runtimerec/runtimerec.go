// Package runtimerec records a runtime's NRI traffic from inside nrikit's
// runtime library (package adaptation), into a recording of package
// record with source "runtime" (docs/record.md). Besides what the
// recorder plugin records (the Synchronize snapshot, every event with its
// pod and container as the runtime sent them, the validation request
// with the combined adjustment, the created container), it records each
// plugin's own answer to every event, with its error and latency, and
// each change of an answer that the administrator's policy refused: what
// `nri replay` compares plugin by plugin.
//
// A [Recording] is two adaptation options ([Recording.Options]): a
// builtin plugin that only observes (docs/protocol.md §5.5), index
// [Index] and name [Name], which records the events and is never waited
// for, and a metrics recorder told of every plugin's call and refused
// change, which records the answers. Nothing it does changes a request or
// makes one wait: the answers are copied and queued for the recording's
// writer goroutine, and dropped (counted in the file) when its queue is
// full.
//
// A runtime on compat/nri (containerd or CRI-O built on nrikit) records
// when the file [FileName] is beside its policy file (/etc/nri/record.yaml
// by default); see [LoadFile].
package runtimerec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/trustedfile"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
	"github.com/nrikit/nrikit/stub"
	"google.golang.org/protobuf/proto"
)

const (
	// FileName is the configuration of a recording runtime (the YAML of
	// record.Config), beside its policy file.
	FileName = "record.yaml"
	// MaxFileSize bounds the configuration file.
	MaxFileSize = 64 << 10
	// Index and Name are the builtin observer's.
	Index = "99"
	Name  = "nri-record"
)

// Recording records the NRI traffic of the Adaptation it is an option of.
type Recording struct {
	rec  *record.Recorder
	svc  api.PluginService
	full string
	log  *slog.Logger

	// last is each plugin's last call, to tell a refused change's event
	// and subject (the runtime checks an answer right after its call).
	mu   sync.Mutex
	last map[string]lastCall
}

// lastCall is a plugin's last call as the metrics recorder saw it.
type lastCall struct {
	event api.Event
	subj  record.Subject
}

// maxTracked bounds the plugins whose last call is kept: plugin names are
// the plugins' choice.
const maxTracked = 1024

// Start starts a recording as cfg says, its file's header naming node.
// The file is created when the Adaptation starts (its builtin recorder
// is configured).
func Start(cfg record.Config, node string, log *slog.Logger) (*Recording, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	full := api.FullPluginName(Index, Name)
	rec, err := cfg.Start(&recordpb.Header{Source: record.SourceRuntime, Node: node, Recorder: full}, log)
	if err != nil {
		return nil, fmt.Errorf("runtimerec: %w", err)
	}
	svc, err := stub.NewBuiltin(builtin{rec}, stub.WithObserveOnly(), stub.WithLogger(log))
	if err != nil {
		rec.Close(context.Background())
		return nil, fmt.Errorf("runtimerec: %w", err)
	}
	return &Recording{rec: rec, svc: svc, full: full, log: log, last: map[string]lastCall{}}, nil
}

// LoadFile starts the recording the configuration file at path asks for:
// nil if there is no such file. The file must be trusted as the runtime's
// configuration is (a regular file owned by root or the runtime's user,
// not writable by others, at most MaxFileSize bytes), and so must the
// directories of the recording and of its key (owned by root or the
// runtime's user, not writable by others).
func LoadFile(path, node string, log *slog.Logger) (*Recording, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	data, err := trustedfile.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("runtimerec: %w", err)
	}
	cfg, err := record.ParseConfig(path, string(data))
	if err != nil {
		return nil, fmt.Errorf("runtimerec: %w", err)
	}
	out := cmp.Or(cfg.Path, record.DefaultPath)
	for _, dir := range []string{filepath.Dir(out), filepath.Dir(cmp.Or(cfg.KeyFile, out+record.KeySuffix))} {
		if _, err := trustedfile.CheckDir(dir); err != nil {
			return nil, fmt.Errorf("runtimerec: %s: the recording's directories: %w", path, err)
		}
	}
	return Start(cfg, node, log)
}

// Options returns the adaptation options that make the Adaptation record
// into r.
func (r *Recording) Options() []adaptation.Option {
	return []adaptation.Option{adaptation.WithBuiltinPlugin(Index, Name, r.svc), adaptation.WithMetricsRecorder(r)}
}

// Close writes what is queued and closes the recording, at most until ctx
// ends. Stop the Adaptation first: it lets the builtin recorder finish
// the events it was sent.
func (r *Recording) Close(ctx context.Context) error {
	err := r.rec.Close(ctx)
	s := r.rec.Stats()
	r.log.Info("NRI recording closed", "records", s.Records, "bytes", s.Bytes, "dropped", s.Dropped)
	return err
}

// Stats returns what the recording wrote (after Close).
func (r *Recording) Stats() record.Stats { return r.rec.Stats() }

// RecordCall records a plugin's answer to an event, its error and its
// latency (adaptation.MetricsRecorder).
func (r *Recording) RecordCall(_ context.Context, c adaptation.Call) {
	if c.Plugin == r.full {
		return
	}
	s := subjectOf(c.Request)
	r.mu.Lock()
	if len(r.last) >= maxTracked {
		clear(r.last)
	}
	r.last[c.Plugin] = lastCall{event: c.Event, subj: s}
	r.mu.Unlock()
	var rsp proto.Message
	if c.Response != nil {
		// Written (and redacted) later: the runtime merges the answer
		// meanwhile.
		rsp = proto.Clone(c.Response)
	}
	r.rec.Answer(c.Plugin, c.Event, s, rsp, c.Duration, c.Err)
}

// RecordPluginCount implements adaptation.MetricsRecorder: not recorded.
func (r *Recording) RecordPluginCount(int) {}

// RecordDenied records a change of a plugin's answer that its grant
// refused (adaptation.DeniedRecorder), with the event and subject of the
// plugin's last call: the runtime checks an answer right after the call
// that brought it, before the plugin's next call is taken in.
func (r *Recording) RecordDenied(_ context.Context, plugin, field string) {
	r.mu.Lock()
	lc := r.last[plugin]
	r.mu.Unlock()
	r.rec.Refusal(plugin, lc.event, lc.subj, []string{field}, fmt.Sprintf("the policy refused the plugin's change of %s", field))
}

// subjectOf returns the IDs of a request's pod and container.
func subjectOf(req any) record.Subject {
	var s record.Subject
	if p, ok := req.(interface{ GetPod() *api.PodSandbox }); ok {
		s.Pod = p.GetPod().GetId()
	}
	if c, ok := req.(interface{ GetContainer() *api.Container }); ok {
		s.Container = c.GetContainer().GetId()
		if s.Pod == "" {
			s.Pod = c.GetContainer().GetPodSandboxId()
		}
	}
	return s
}

// builtin is the recorder as the runtime's builtin plugin: its
// subscription leaves out what validation tells (record.Subscription).
type builtin struct{ *record.Recorder }

// Configure starts the recording's file and subscribes.
func (b builtin) Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error) {
	if _, err := b.Recorder.Configure(ctx, config, runtime, version); err != nil {
		return 0, err
	}
	return record.Subscription(stub.SupportedEvents(ctx)), nil
}
