package record

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/nrikit/nrikit/internal/wirelimit"
	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrTruncated is returned by [Reader.Next] for a file that ends in the
// middle of a record, as one does whose recorder was killed: the records
// before it were read whole.
var ErrTruncated = errors.New("record: the recording ends in the middle of a record")

// Entry is one record read, with its message decoded.
type Entry struct {
	*recordpb.Record
	// Message is the decoded protocol message (see [MessageType]), nil
	// for kinds without one.
	Message proto.Message
}

// Reader reads one file of a recording. Every length and count in the
// file is checked against the format's limits before anything is
// allocated for it: a frame's size against MaxFrameSize, a message's
// values against MaxValues (wirelimit), its nesting against
// wirelimit.MaxDepth.
type Reader struct {
	br     *bufio.Reader
	gz     *gzip.Reader
	header *recordpb.Header
	buf    []byte
	// err is the first error of Next, returned again by every later
	// call: past a bad record nothing is trusted.
	err error
}

// NewReader reads the magic line and header of a recording from r.
func NewReader(r io.Reader) (*Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	gz.Multistream(false)
	rd := &Reader{gz: gz, br: bufio.NewReaderSize(gz, 64<<10)}
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(rd.br, magic); err != nil || string(magic) != Magic {
		return nil, fmt.Errorf("%w: no magic line", ErrFormat)
	}
	b, err := rd.frame()
	if err != nil {
		return nil, fmt.Errorf("%w: reading the header: %v", ErrFormat, err)
	}
	h := &recordpb.Header{}
	if err := headerSchema().Check(b); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if err := proto.Unmarshal(b, h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if h.GetVersion() != Version {
		return nil, fmt.Errorf("%w: format version %d, this reader knows %d", ErrFormat, h.GetVersion(), Version)
	}
	rd.header = h
	return rd, nil
}

// Header returns the file's header.
func (r *Reader) Header() *recordpb.Header { return r.header }

// Next returns the next record: io.EOF after the last, ErrTruncated if
// the file ends within a record, an error wrapping ErrFormat for a record
// that is not valid.
func (r *Reader) Next() (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	e, err := r.next()
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) next() (*Entry, error) {
	b, err := r.frame()
	if err != nil {
		return nil, err
	}
	rec := &recordpb.Record{}
	if err := recordSchema().Check(b); err != nil {
		return nil, fmt.Errorf("%w: record: %v", ErrFormat, err)
	}
	if err := proto.Unmarshal(b, rec); err != nil {
		return nil, fmt.Errorf("%w: record: %v", ErrFormat, err)
	}
	mt, err := MessageType(rec.GetKind(), rec.GetEvent())
	if err != nil {
		return nil, err
	}
	e := &Entry{Record: rec}
	if mt != nil {
		m := mt.New().Interface()
		if err := payloadSchema(mt.Descriptor()).Check(rec.GetMessage()); err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrFormat, rec.GetSeq(), err)
		}
		if err := proto.Unmarshal(rec.GetMessage(), m); err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrFormat, rec.GetSeq(), err)
		}
		e.Message = m
		rec.Message = nil
	}
	return e, nil
}

// frame reads one length-prefixed frame into the reader's buffer.
func (r *Reader) frame() ([]byte, error) {
	n, err := binary.ReadUvarint(r.br)
	switch {
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, ErrTruncated
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	case n > MaxFrameSize:
		return nil, fmt.Errorf("%w: a record of %d bytes exceeds the format's %d", ErrFormat, n, MaxFrameSize)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.br, r.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrTruncated
		}
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return r.buf, nil
}

// The schemas that bound what a record decodes into.
var (
	headerSchema = sync.OnceValue(func() *wirelimit.Schema {
		return wirelimit.Compile((&recordpb.Header{}).ProtoReflect().Descriptor(), wirelimit.Limits{Values: 1024})
	})
	recordSchema = sync.OnceValue(func() *wirelimit.Schema {
		return wirelimit.Compile((&recordpb.Record{}).ProtoReflect().Descriptor(), wirelimit.Limits{Values: 1024})
	})
	payloadSchemas sync.Map // protoreflect.FullName → *wirelimit.Schema
)

func payloadSchema(md protoreflect.MessageDescriptor) *wirelimit.Schema {
	if s, ok := payloadSchemas.Load(md.FullName()); ok {
		return s.(*wirelimit.Schema)
	}
	s, _ := payloadSchemas.LoadOrStore(md.FullName(), wirelimit.Compile(md, wirelimit.Limits{Values: MaxValues}))
	return s.(*wirelimit.Schema)
}

// Files returns the files of the recording whose current file is path,
// oldest first: path.N, ..., path.1, path (those that exist).
func Files(path string) ([]string, error) {
	var rotated []string
	for i := 1; i <= maxRotated; i++ {
		p := path + "." + strconv.Itoa(i)
		if _, err := os.Lstat(p); err != nil {
			break
		}
		rotated = append(rotated, p)
	}
	out := make([]string, 0, len(rotated)+1)
	for i := len(rotated) - 1; i >= 0; i-- {
		out = append(out, rotated[i])
	}
	if _, err := os.Lstat(path); err != nil {
		if len(out) == 0 {
			return nil, fmt.Errorf("record: %w", err)
		}
		return out, nil
	}
	return append(out, path), nil
}

// maxRotated bounds the rotated files Files looks for.
const maxRotated = 1000
