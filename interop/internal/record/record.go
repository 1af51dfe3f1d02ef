// Package record is how the interoperability test plugins tell the tests
// what they saw and answered: one JSON object per line in a file, with
// the requests and responses in their protobuf wire encoding, so that a
// test can decode them into whichever api package it compares with.
package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"google.golang.org/protobuf/proto"
)

// Record is one request a plugin handled.
type Record struct {
	// Plugin is the plugin's IDX-NAME.
	Plugin string `json:"plugin"`
	// Event is the request: an event name such as "CreateContainer", or
	// "Configure", "Synchronize", "Shutdown", "UpdateContainers" (an
	// unsolicited update the plugin sent), "Start" (the plugin's own
	// registration result).
	Event string `json:"event"`
	// Req is the wire encoding of the request (or of what the plugin
	// sent, for UpdateContainers).
	Req []byte `json:"req,omitempty"`
	// Rsp is the wire encoding of the plugin's answer.
	Rsp []byte `json:"rsp,omitempty"`
	// Err is the error the plugin answered or got, if any.
	Err string `json:"err,omitempty"`
}

// Writer appends records to a file; it is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	plugin string
}

// Create opens path for appending records of plugin; an empty path gives
// a Writer that discards everything.
func Create(path, plugin string) (*Writer, error) {
	w := &Writer{plugin: plugin}
	if path == "" {
		return w, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	w.f = f
	return w, nil
}

// SetPlugin sets the plugin name of the following records.
func (w *Writer) SetPlugin(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.plugin = name
}

// Add appends one record; req and rsp may be nil.
func (w *Writer) Add(event string, req, rsp proto.Message, err error) error {
	r := Record{Event: event}
	var merr error
	if req != nil {
		r.Req, merr = proto.Marshal(req)
	}
	if rsp != nil && merr == nil {
		r.Rsp, merr = proto.Marshal(rsp)
	}
	if merr != nil {
		return fmt.Errorf("record: %s: %w", event, merr)
	}
	if err != nil {
		r.Err = err.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	r.Plugin = w.plugin
	line, jerr := json.Marshal(r)
	if jerr != nil {
		return fmt.Errorf("record: %s: %w", event, jerr)
	}
	if _, werr := w.f.Write(append(line, '\n')); werr != nil {
		return fmt.Errorf("record: %s: %w", event, werr)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Read returns the records in path, in the order they were written; a
// missing file has none.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return out, fmt.Errorf("record: %s: line %d: %w", path, len(out)+1, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("record: %s: %w", path, err)
	}
	return out, nil
}

// Filter returns the records of event, in order.
func Filter(rs []Record, event string) []Record {
	var out []Record
	for _, r := range rs {
		if r.Event == event {
			out = append(out, r)
		}
	}
	return out
}

// Decode decodes b into m.
func Decode[M proto.Message](b []byte, m M) (M, error) {
	if err := proto.Unmarshal(b, m); err != nil {
		return m, fmt.Errorf("record: decoding %T: %w", m, err)
	}
	return m, nil
}
