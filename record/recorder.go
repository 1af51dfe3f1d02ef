package record

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/proto"
)

// Defaults of a Recorder.
const (
	// DefaultQueueSize is the number of items a Recorder holds for its
	// writer before it drops new ones.
	DefaultQueueSize = 8192
	// DefaultFlushInterval is how often the writer flushes to the file
	// while records arrive.
	DefaultFlushInterval = time.Second
)

// RecorderConfig configures a [Recorder].
type RecorderConfig struct {
	// Writer is the recording's file, cap and redaction; its Header's
	// runtime name and version are filled in from Configure, and its
	// State by the Recorder.
	Writer WriterConfig
	// QueueSize bounds the items waiting for the writer (0:
	// DefaultQueueSize). When it is full, items are dropped and counted
	// in a DROPPED record: the recorder never holds up the runtime.
	QueueSize int
	// FlushInterval is how often written records are flushed to the file
	// (0: DefaultFlushInterval).
	FlushInterval time.Duration
	// Log receives the writer's errors (nil: dropped).
	Log *slog.Logger

	// beforeWrite, if set, is called by the writer goroutine before it
	// writes an item (tests hold the writer with it).
	beforeWrite func()
}

// Recorder records every event it is sent into a recording. It is a
// plugin's handlers (the stub's handler interfaces: it runs as a process
// with package stub, as plugins/recorder does, or in-process with
// stub.NewBuiltin) and answers every request at once without a change
// and without an error: the event is queued for the Recorder's writer
// goroutine, which redacts, encodes, compresses and writes it. A full
// queue drops events (counted, and recorded as such) rather than wait.
//
// The handler arguments are kept until written: the caller must not
// change them after the call (the stub decodes each request afresh; the
// runtime library hands a builtin plugin a copy).
type Recorder struct {
	cfg     RecorderConfig
	q       chan item
	dropped atomic.Uint64
	// redactor is the redactor of the files started from now on.
	redactor atomic.Pointer[Redactor]
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once

	// Owned by the writer goroutine.
	w     *Writer
	err   error // the writer's last error, logged once
	pods  map[string]*api.PodSandbox
	ctrs  map[string]*api.Container
	dirty bool
	// Statistics, read with Stats after Close.
	stats Stats
}

// item is one thing to record.
type item struct {
	rec  *recordpb.Record
	msg  proto.Message
	pods []*api.PodSandbox // a snapshot (rec.Kind SYNCHRONIZE)
	ctrs []*api.Container
	// configure: the runtime (re)configured the recorder: start a file.
	configure      bool
	runtime, rtVer string
	// flushed, if set, is closed once the item is written and flushed.
	flushed chan struct{}
}

// Stats are what a Recorder wrote.
type Stats struct {
	// Records and Bytes count the records written and their encoded
	// size before compression; FileBytes is the compressed size of the
	// current file.
	Records, Bytes uint64
	FileBytes      int64
	// Dropped counts the items dropped for a full queue.
	Dropped uint64
}

// NewRecorder returns a recorder and starts its writer. The file is
// created when the runtime configures the recorder (its header names the
// runtime); Close stops the writer and closes the file.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	if cfg.Writer.Path == "" {
		return nil, errors.New("record: no path to write to")
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{
		cfg:  cfg,
		q:    make(chan item, cfg.QueueSize),
		stop: make(chan struct{}),
		done: make(chan struct{}),
		pods: map[string]*api.PodSandbox{},
		ctrs: map[string]*api.Container{},
	}
	go r.run()
	return r, nil
}

// SetRedactor sets the redactor of the files the recorder starts from
// the next Configure on: call it before that Configure, from the
// goroutine that makes it (the writer reads it when it takes the
// Configure in).
func (r *Recorder) SetRedactor(red *Redactor) {
	r.redactor.Store(red)
}

// Close writes what is queued, closes the file and stops the writer. It
// waits at most until ctx ends.
func (r *Recorder) Close(ctx context.Context) error {
	r.once.Do(func() { close(r.stop) })
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns what the recorder wrote; call it after Close.
func (r *Recorder) Stats() Stats {
	select {
	case <-r.done:
	default:
		return Stats{Dropped: r.dropped.Load()}
	}
	s := r.stats
	s.Dropped += r.dropped.Load() // dropped after the last record
	return s
}

// Flush waits until everything queued so far is written and flushed to
// the file, or ctx ends.
func (r *Recorder) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	select {
	case r.q <- item{flushed: ch}:
	case <-r.done:
		return errors.New("record: recorder closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ch:
		return nil
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// add queues an item, or drops it if the queue is full.
func (r *Recorder) add(it item) {
	select {
	case r.q <- it:
	default:
		r.dropped.Add(1)
	}
}

// Event records a request of the runtime about event e; req is the
// Plugin service's request message for e.
func (r *Recorder) Event(e api.Event, req proto.Message) {
	r.add(item{rec: &recordpb.Record{Kind: recordpb.Kind_REQUEST, Event: e, TimeUnixNano: time.Now().UnixNano()}, msg: req})
}

// Subject is what an event is about: the IDs of its pod and container
// (empty where it has none).
type Subject struct{ Pod, Container string }

// Answer records one plugin's answer to event e about s (a runtime's
// recording): rsp (nil if it failed), how long it took, and its error.
// rsp is kept until written, and redacted in place: pass a copy of a
// message others use.
func (r *Recorder) Answer(plugin string, e api.Event, s Subject, rsp proto.Message, took time.Duration, err error) {
	rec := &recordpb.Record{Kind: recordpb.Kind_ANSWER, Event: e, Plugin: plugin, DurationNanos: int64(took),
		PodId: s.Pod, ContainerId: s.Container, TimeUnixNano: time.Now().UnixNano()}
	if err != nil {
		rec.Error = err.Error()
	}
	r.add(item{rec: rec, msg: rsp})
}

// Refusal records that the runtime's policy refused plugin's answer to
// e about s (UNKNOWN and empty if not known): the refused fields and the
// refusal.
func (r *Recorder) Refusal(plugin string, e api.Event, s Subject, fields []string, reason string) {
	r.add(item{rec: &recordpb.Record{Kind: recordpb.Kind_REFUSAL, Event: e, Plugin: plugin, RefusedFields: fields,
		PodId: s.Pod, ContainerId: s.Container, Error: reason, TimeUnixNano: time.Now().UnixNano()}})
}

// run is the writer goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	tick := time.NewTicker(r.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case it := <-r.q:
			r.write(it)
		case <-tick.C:
			if r.dirty {
				r.flush()
			}
		case <-r.stop:
			for {
				select {
				case it := <-r.q:
					r.write(it)
					continue
				default:
				}
				break
			}
			r.closeWriter()
			return
		}
	}
}

func (r *Recorder) closeWriter() {
	if r.w == nil {
		return
	}
	r.writeDropped()
	r.stats.Records, r.stats.Bytes, r.stats.FileBytes = r.w.Stats()
	r.fail(r.w.Close())
	r.w = nil
}

// fail logs a writer error once per kind of failure and keeps it.
func (r *Recorder) fail(err error) {
	if err == nil {
		return
	}
	if r.err == nil || r.err.Error() != err.Error() {
		r.cfg.Log.Error("recording failed", "path", r.cfg.Writer.Path, "error", err)
	}
	r.err = err
}

func (r *Recorder) flush() {
	if r.w != nil {
		r.fail(r.w.Flush())
	}
	r.dirty = false
}

// write records one item.
func (r *Recorder) write(it item) {
	if r.cfg.beforeWrite != nil {
		r.cfg.beforeWrite()
	}
	if it.flushed != nil {
		r.flush()
		close(it.flushed)
		return
	}
	if it.configure {
		r.start(it.runtime, it.rtVer)
		return
	}
	if r.w == nil {
		r.start("", "")
		if r.w == nil {
			return
		}
	}
	r.writeDropped()
	var err error
	if it.rec.GetKind() == recordpb.Kind_SYNCHRONIZE {
		err = r.w.WriteSync(recordpb.Kind_SYNCHRONIZE, it.pods, it.ctrs, time.Unix(0, it.rec.GetTimeUnixNano()))
		for _, p := range it.pods {
			r.pods[p.GetId()] = p
		}
		for _, c := range it.ctrs {
			r.ctrs[c.GetId()] = c
		}
	} else {
		err = r.w.Write(it.rec, it.msg)
		if it.rec.GetKind() == recordpb.Kind_REQUEST {
			r.track(it.rec.GetEvent(), it.msg)
		}
	}
	r.fail(err)
	r.dirty = true
}

// writeDropped records the items dropped since the last DROPPED record.
func (r *Recorder) writeDropped() {
	if n := r.dropped.Swap(0); n > 0 {
		r.stats.Dropped += n
		r.fail(r.w.Write(&recordpb.Record{Kind: recordpb.Kind_DROPPED, Dropped: n, TimeUnixNano: time.Now().UnixNano()}, nil))
	}
}

// start starts a file for the runtime: the first, or a new one when the
// runtime configured the recorder again (it restarted).
func (r *Recorder) start(runtime, version string) {
	if r.w != nil {
		r.closeWriter()
		clear(r.pods)
		clear(r.ctrs)
	}
	cfg := r.cfg.Writer
	h := proto.Clone(cfg.Header).(*recordpb.Header)
	if cfg.Header == nil {
		h = &recordpb.Header{}
	}
	h.RuntimeName, h.RuntimeVersion = runtime, version
	cfg.Header = h
	cfg.State = r.state
	if red := r.redactor.Load(); red != nil {
		cfg.Redactor = red
	}
	w, err := NewWriter(cfg)
	if err != nil {
		r.fail(err)
		return
	}
	r.w = w
	r.dirty = true
}

// state returns what the recorder knows exists, for a rotated file.
func (r *Recorder) state() ([]*api.PodSandbox, []*api.Container) {
	pods := make([]*api.PodSandbox, 0, len(r.pods))
	for _, p := range r.pods {
		pods = append(pods, p)
	}
	ctrs := make([]*api.Container, 0, len(r.ctrs))
	for _, c := range r.ctrs {
		ctrs = append(ctrs, c)
	}
	return pods, ctrs
}

// track keeps the recorder's view of the node's pods and containers
// current (as written, redacted), for the STATE of a rotated file.
func (r *Recorder) track(e api.Event, m proto.Message) {
	type podCtr interface {
		GetPod() *api.PodSandbox
	}
	type ctrGetter interface {
		GetContainer() *api.Container
	}
	var pod *api.PodSandbox
	var ctr *api.Container
	if p, ok := m.(podCtr); ok {
		pod = p.GetPod()
	}
	if c, ok := m.(ctrGetter); ok {
		ctr = c.GetContainer()
	}
	switch e {
	case api.Event_REMOVE_POD_SANDBOX:
		delete(r.pods, pod.GetId())
	case api.Event_REMOVE_CONTAINER:
		delete(r.ctrs, ctr.GetId())
	case api.Event_VALIDATE_CONTAINER_ADJUSTMENT, api.Event_CREATE_CONTAINER:
		// Not yet created: PostCreateContainer reports the container.
		if pod != nil {
			r.pods[pod.GetId()] = pod
		}
	default:
		if pod != nil {
			r.pods[pod.GetId()] = pod
		}
		if ctr != nil {
			r.ctrs[ctr.GetId()] = ctr
		}
	}
}
