package record

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
)

// FuzzReader feeds the reader arbitrary files: it must return records or
// an error, never panic, and never read past a bad record. (The bounds
// on what it allocates are TestReaderBounds'.)
func FuzzReader(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed")
	w, err := NewWriter(WriterConfig{Path: path, Header: &recordpb.Header{Source: SourcePlugin}})
	if err != nil {
		f.Fatal(err)
	}
	w.WriteSync(recordpb.Kind_SYNCHRONIZE, []*api.PodSandbox{testPod(0)}, []*api.Container{testCtr(0)}, fixedTime)
	w.Write(&recordpb.Record{Kind: recordpb.Kind_REQUEST, Event: api.Event_CREATE_CONTAINER}, &api.CreateContainerRequest{Pod: testPod(1), Container: testCtr(1)})
	w.Write(&recordpb.Record{Kind: recordpb.Kind_ANSWER, Event: api.Event_UPDATE_CONTAINER, Plugin: "10-a"}, &api.UpdateContainerResponse{})
	w.Write(&recordpb.Record{Kind: recordpb.Kind_DROPPED, Dropped: 1}, nil)
	w.Close()
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for range 10000 {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				// After a bad record the reader reads no further.
				if _, again := r.Next(); again == nil {
					t.Fatalf("a record read after the error %v", err)
				}
				return
			}
			if e.Record == nil {
				t.Fatal("nil record without error")
			}
		}
	})
}

// FuzzRecordPayload feeds the decoder of records arbitrary record bytes
// inside a valid file.
func FuzzRecordPayload(f *testing.F) {
	f.Add([]byte{0x18, 0x01, 0x20, 0x04, 0x2a, 0x02, 0x12, 0x00})
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1<<16 {
			return
		}
		var b bytes.Buffer
		gz := newGzip(&b)
		io.WriteString(gz, Magic)
		hdr := []byte{0x08, 0x01} // version 1
		gz.Write(uvarint(uint64(len(hdr))))
		gz.Write(hdr)
		gz.Write(uvarint(uint64(len(frame))))
		gz.Write(frame)
		gz.Close()
		r, err := NewReader(&b)
		if err != nil {
			t.Fatalf("valid header refused: %v", err)
		}
		e, err := r.Next()
		if err == nil && e.Message != nil {
			if _, err := MessageType(e.GetKind(), e.GetEvent()); err != nil {
				t.Fatalf("decoded a record of no type: %v", err)
			}
		}
	})
}
