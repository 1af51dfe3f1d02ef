package record

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
)

// TestWriterOnlyRecordings checks that a Writer started where something
// else than a recording is (a FIFO, a symbolic link, another file: a
// mistaken path, or one an attacker prepared) neither writes into it,
// nor moves, truncates or chmods it, nor hangs (a FIFO without a
// reader); and that a recording found there (the one before a restart)
// is kept as PATH.1.
func TestWriterOnlyRecordings(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, link, other} {
		done := make(chan error, 1)
		go func() {
			w, err := NewWriter(WriterConfig{Path: path})
			if err == nil {
				w.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: a recording was started", path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: NewWriter hangs", path)
		}
		if _, err := os.Lstat(path + ".1"); err == nil {
			t.Errorf("%s was moved away", path)
		}
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO: %v, %v", info, err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("the link's target was created")
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "precious" {
		t.Errorf("the other file holds %q (%v)", b, err)
	}
	if info, _ := os.Stat(other); info.Mode().Perm() != 0o644 {
		t.Errorf("the other file's mode is %v", info.Mode())
	}

	// A recording is kept, as PATH.1, by a Writer started after it.
	path := filepath.Join(dir, "rec")
	for range 2 {
		w, err := NewWriter(WriterConfig{Path: path, Header: &recordpb.Header{Node: "n"}})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(&recordpb.Record{Kind: recordpb.Kind_REQUEST, Event: api.Event_RUN_POD_SANDBOX}, &api.RunPodSandboxRequest{Pod: testPod(0)})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if files, err := Files(path); err != nil || len(files) != 2 {
		t.Errorf("after a restart: %v, %v; want the recording before it kept", files, err)
	}
}

// TestRecorderQueueOverflow checks that the handlers never wait for a
// writer that is stuck (a slow or hung disk): what does not fit the queue
// is dropped, counted, and recorded as dropped once the writer goes on.
func TestRecorderQueueOverflow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	rec, err := NewRecorder(RecorderConfig{Writer: WriterConfig{Path: path}, QueueSize: 4, beforeWrite: func() {
		select {
		case held <- struct{}{}:
		default:
		}
		<-hold
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec.Configure(ctx, "", "rt", "1")
	<-held // the writer is stuck in its first item
	const sent = 1000
	start := time.Now()
	for i := range sent {
		if adj, upd, err := rec.CreateContainer(ctx, testPod(i), testCtr(i)); adj != nil || upd != nil || err != nil {
			t.Fatalf("CreateContainer answered %v, %v, %v", adj, upd, err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("%d events took %v with the writer stuck", sent, took)
	}
	close(hold)
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := rec.Stats()
	if s.Dropped != sent-4 {
		t.Errorf("dropped %d, want %d (the queue holds 4)", s.Dropped, sent-4)
	}
	_, entries, err := readAll(t, path)
	if err != nil {
		t.Fatal(err)
	}
	var created, dropped uint64
	for _, e := range entries {
		switch e.GetKind() {
		case recordpb.Kind_REQUEST:
			created++
		case recordpb.Kind_DROPPED:
			dropped += e.GetDropped()
		}
	}
	if created != 4 || dropped != sent-4 {
		t.Errorf("the file holds %d events and %d dropped, want 4 and %d", created, dropped, sent-4)
	}
}

// TestRecorderWriteFailure checks that a recording that cannot be
// written (its directory is gone) changes nothing of the answers: every
// handler still answers at once without a change or an error, and the
// failure is reported by Close, logged once.
func TestRecorderWriteFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "rec")
	rec, err := NewRecorder(RecorderConfig{Writer: WriterConfig{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ev, err := rec.Configure(ctx, "", "rt", "1"); ev != 0 || err != nil {
		t.Errorf("Configure: %v, %v", ev, err)
	}
	if upd, err := rec.Synchronize(ctx, []*api.PodSandbox{testPod(0)}, nil); upd != nil || err != nil {
		t.Errorf("Synchronize: %v, %v", upd, err)
	}
	if adj, upd, err := rec.CreateContainer(ctx, testPod(0), testCtr(0)); adj != nil || upd != nil || err != nil {
		t.Errorf("CreateContainer: %v, %v, %v", adj, upd, err)
	}
	if err := rec.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{}); err != nil {
		t.Errorf("ValidateContainerAdjustment: %v", err)
	}
	if err := rec.Close(ctx); err == nil || !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Close: %v, want the failure to create the file", err)
	}
}

// TestKeyOwnedByAnother checks that a key file another user made (who
// may know the key, and so test guessed values against the hashes) is
// refused. It needs root, to give the file away.
func TestKeyOwnedByAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file owned by another user")
	}
	path := filepath.Join(t.TempDir(), "key")
	if _, err := LoadKey(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); err == nil || !strings.Contains(err.Error(), "owned by another user") {
		t.Errorf("a key owned by another user: %v", err)
	}
}
