package record

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/proto"
)

// Defaults of a Writer's cap.
const (
	// DefaultMaxFileSize is the compressed size at which a file is
	// rotated.
	DefaultMaxFileSize = 64 << 20
	// DefaultMaxFiles is the number of files kept (the current one and
	// DefaultMaxFiles-1 rotated ones): a recording takes at most about
	// DefaultMaxFiles × DefaultMaxFileSize on disk.
	DefaultMaxFiles = 4
)

// FileMode is the mode recordings are created with.
const FileMode = 0o600

// WriterConfig configures a [Writer].
type WriterConfig struct {
	// Path is the current file; rotated files are Path.1 (the newest) to
	// Path.N.
	Path string
	// MaxFileSize is the compressed size in bytes past which the file is
	// rotated (0: DefaultMaxFileSize), not counting the header and the
	// state a rotated file starts with. A file may exceed it by one
	// record and the compressor's buffer.
	MaxFileSize int64
	// MaxFiles is the number of files kept, the current one included (0:
	// DefaultMaxFiles; 1: the file is started anew, without a rotated
	// copy).
	MaxFiles int
	// Header is the header of every file; Version, FileIndex,
	// StartedUnixNano and Redaction are set by the Writer.
	Header *recordpb.Header
	// Redactor redacts every message written (nil: values are kept).
	Redactor *Redactor
	// State, if set, is called when a rotated file starts: its pods and
	// containers are written as STATE records, so that the file replays
	// without its predecessors.
	// The objects are written as they are, not redacted again: they must
	// be ones the Writer wrote (and redacted) before.
	State func() (pods []*api.PodSandbox, ctrs []*api.Container)
}

// Writer writes a recording: compressed, capped and rotated (see
// [WriterConfig]). It is not safe for concurrent use: one goroutine owns
// it (the [Recorder]'s writer).
type Writer struct {
	cfg   WriterConfig
	f     *os.File
	count *countWriter
	gz    *gzip.Writer
	bw    *bufio.Writer
	index uint64
	seq   uint64
	buf   []byte
	// base is the compressed size of the current file's header and
	// state, not counted against MaxFileSize: a state larger than the cap
	// would otherwise rotate the file at every record.
	base int64
	// starting is set while a new file's STATE is written: it is not
	// rotated before it holds its state.
	starting bool
	// Records and Bytes count what was written, for measurements.
	records, bytes uint64
}

// NewWriter creates cfg.Path, mode 0600, and writes its header. A file
// already at the path (a recording before a restart) is rotated away
// first, as the current file is when it grows past the cap: it is kept as
// Path.1 (with MaxFiles 1, it is removed).
func NewWriter(cfg WriterConfig) (*Writer, error) {
	if cfg.Path == "" {
		return nil, errors.New("record: no path to write to")
	}
	if cfg.MaxFileSize < 0 || cfg.MaxFiles < 0 {
		return nil, errors.New("record: negative size cap")
	}
	if cfg.MaxFileSize == 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.MaxFiles == 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.Header == nil {
		cfg.Header = &recordpb.Header{}
	}
	w := &Writer{cfg: cfg}
	if _, err := os.Lstat(cfg.Path); err == nil {
		if err := isRecording(cfg.Path); err != nil {
			return nil, err
		}
		if err := w.shift(); err != nil {
			return nil, err
		}
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open starts the current file.
func (w *Writer) open() error {
	// A new file only (the previous one was rotated away): nothing that
	// appeared at the path meanwhile (a link, a device, a FIFO, another
	// file) is written into, truncated or has its mode changed.
	f, err := os.OpenFile(w.cfg.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow|nonBlock, FileMode)
	if err != nil {
		return fmt.Errorf("record: creating %s: %w", w.cfg.Path, err)
	}
	// The umask may have narrowed the mode; nothing widens it.
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		return fmt.Errorf("record: %w", err)
	}
	w.f = f
	w.count = &countWriter{w: f}
	gz, _ := gzip.NewWriterLevel(w.count, gzip.BestSpeed)
	w.gz = gz
	w.bw = bufio.NewWriterSize(gz, 64<<10)
	h := proto.Clone(w.cfg.Header).(*recordpb.Header)
	h.Version = Version
	h.FileIndex = w.index
	h.StartedUnixNano = time.Now().UnixNano()
	h.Redaction = w.cfg.Redactor.header()
	if _, err := io.WriteString(w.bw, Magic); err != nil {
		return w.fail(err)
	}
	if err := w.frame(h); err != nil {
		return w.fail(err)
	}
	if w.index > 0 && w.cfg.State != nil {
		pods, ctrs := w.cfg.State()
		w.starting = true
		defer func() { w.starting = false }()
		if err := w.writeSync(recordpb.Kind_STATE, pods, ctrs, time.Now(), false); err != nil {
			return w.fail(err)
		}
	}
	if err := w.Flush(); err != nil {
		return w.fail(err)
	}
	w.base = w.count.n
	return nil
}

func (w *Writer) fail(err error) error {
	w.f.Close()
	w.f = nil
	return fmt.Errorf("record: writing %s: %w", w.cfg.Path, err)
}

// Write writes one record. Its message (if any) is redacted in place
// first and must not be used by others meanwhile. rec.Seq is set.
func (w *Writer) Write(rec *recordpb.Record, m proto.Message) error {
	return w.write(rec, m, true)
}

func (w *Writer) write(rec *recordpb.Record, m proto.Message, redact bool) error {
	if w.f == nil {
		return errors.New("record: writer closed")
	}
	if m != nil {
		if redact {
			w.cfg.Redactor.Redact(m)
		}
		b, err := proto.Marshal(m)
		if err != nil {
			return fmt.Errorf("record: encoding a %s record: %w", rec.GetKind(), err)
		}
		rec.Message = b
	}
	w.seq++
	rec.Seq = w.seq
	if err := w.frame(rec); err != nil {
		return err
	}
	w.records++
	if w.count.n-w.base >= w.cfg.MaxFileSize && !w.starting {
		return w.rotate()
	}
	return nil
}

// WriteSync writes a snapshot (kind SYNCHRONIZE or STATE) in parts of at
// most MaxSyncPart objects, pods first, redacting them in place.
func (w *Writer) WriteSync(kind recordpb.Kind, pods []*api.PodSandbox, ctrs []*api.Container, at time.Time) error {
	return w.writeSync(kind, pods, ctrs, at, true)
}

func (w *Writer) writeSync(kind recordpb.Kind, pods []*api.PodSandbox, ctrs []*api.Container, at time.Time, redact bool) error {
	for first := true; first || len(pods)+len(ctrs) > 0; first = false {
		part := &api.SynchronizeRequest{}
		n := min(len(pods), MaxSyncPart)
		part.Pods, pods = pods[:n], pods[n:]
		m := min(len(ctrs), MaxSyncPart-n)
		part.Containers, ctrs = ctrs[:m], ctrs[m:]
		part.More = len(pods)+len(ctrs) > 0
		if err := w.write(&recordpb.Record{Kind: kind, TimeUnixNano: at.UnixNano()}, part, redact); err != nil {
			return err
		}
	}
	return nil
}

// frame writes m length-prefixed.
func (w *Writer) frame(m proto.Message) error {
	var err error
	w.buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(w.buf[:0], m)
	if err != nil {
		return fmt.Errorf("record: encoding a record: %w", err)
	}
	if len(w.buf) > MaxFrameSize {
		return fmt.Errorf("record: a record of %d bytes exceeds the format's %d", len(w.buf), MaxFrameSize)
	}
	var n [binary.MaxVarintLen64]byte
	if _, err := w.bw.Write(n[:binary.PutUvarint(n[:], uint64(len(w.buf)))]); err != nil {
		return err
	}
	_, err = w.bw.Write(w.buf)
	w.bytes += uint64(len(w.buf))
	return err
}

// Flush writes what is buffered through to the file (a reader of the
// file then sees every record written so far).
func (w *Writer) Flush() error {
	if w.f == nil {
		return errors.New("record: writer closed")
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := w.gz.Flush(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// rotate closes the current file, shifts the rotated ones and starts a
// new current file.
func (w *Writer) rotate() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	if err := w.shift(); err != nil {
		return err
	}
	w.index++
	return w.open()
}

// isRecording checks that what is at path is a recording (a regular
// file with a recording's header), the only thing a Writer moves away
// from its path: not a link, a device or another file, which a mistaken
// path could name.
func isRecording(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return fmt.Errorf("record: %s exists and cannot be checked to be a recording: %w", path, err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("record: %s exists and is not a recording (not a regular file): refusing to replace it", path)
	}
	if _, err := NewReader(f); err != nil {
		return fmt.Errorf("record: %s exists and is not a recording (%v): refusing to replace it", path, err)
	}
	return nil
}

// shift moves the current file to Path.1 and each rotated file one
// further, dropping the oldest (with MaxFiles 1: removes the current
// file). Renames and removals act on the names, never on what a
// symbolic link points to.
func (w *Writer) shift() error {
	for i := w.cfg.MaxFiles - 1; i >= 1; i-- {
		from := w.cfg.Path
		if i > 1 {
			from = fmt.Sprintf("%s.%d", w.cfg.Path, i-1)
		}
		if err := os.Rename(from, fmt.Sprintf("%s.%d", w.cfg.Path, i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record: rotating: %w", err)
		}
	}
	if w.cfg.MaxFiles == 1 {
		if err := os.Remove(w.cfg.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record: starting anew: %w", err)
		}
	}
	return nil
}

func (w *Writer) closeFile() error {
	err := errors.Join(w.bw.Flush(), w.gz.Close(), w.f.Close())
	w.f = nil
	if err != nil {
		return fmt.Errorf("record: closing %s: %w", w.cfg.Path, err)
	}
	return nil
}

// Close flushes and closes the current file.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	return w.closeFile()
}

// Stats returns the records written and their encoded bytes before
// compression, and the compressed bytes of the current file.
func (w *Writer) Stats() (records, bytes uint64, fileBytes int64) {
	return w.records, w.bytes, w.count.n
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
