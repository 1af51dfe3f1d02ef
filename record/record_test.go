package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/proto"
)

func testKey() []byte { return bytes.Repeat([]byte{7}, KeySize) }

func testPod(i int) *api.PodSandbox {
	return &api.PodSandbox{Id: fmt.Sprint("pod-", i), Name: fmt.Sprint("p", i), Namespace: "ns",
		Annotations: map[string]string{"secret": "hunter2", "keep.example.com/x": "clear"}}
}

func testCtr(i int) *api.Container {
	return &api.Container{Id: fmt.Sprint("ctr-", i), PodSandboxId: fmt.Sprint("pod-", i), Name: "c",
		Env: []string{"PASSWORD=hunter2", "PATH=/bin", "NOVALUE"}, Annotations: map[string]string{"a": "b"}}
}

// readAll reads every record of path.
func readAll(t *testing.T, path string) (*recordpb.Header, []*Entry, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, nil, err
	}
	var out []*Entry
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		out = append(out, e)
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	red, err := NewRedactor(testKey(), nil, []string{"keep.example.com/*"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(WriterConfig{Path: path, Redactor: red, Header: &recordpb.Header{Source: SourcePlugin, Node: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := w.WriteSync(recordpb.Kind_SYNCHRONIZE, []*api.PodSandbox{testPod(0)}, []*api.Container{testCtr(0)}, now); err != nil {
		t.Fatal(err)
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("TOKEN", "hunter2")
	adj.RemoveEnv("OLD")
	writes := []struct {
		rec *recordpb.Record
		msg proto.Message
	}{
		{&recordpb.Record{Kind: recordpb.Kind_REQUEST, Event: api.Event_CREATE_CONTAINER}, &api.CreateContainerRequest{Pod: testPod(1), Container: testCtr(1)}},
		{&recordpb.Record{Kind: recordpb.Kind_ANSWER, Event: api.Event_CREATE_CONTAINER, Plugin: "10-x", DurationNanos: 5}, &api.CreateContainerResponse{Adjust: adj}},
		{&recordpb.Record{Kind: recordpb.Kind_REFUSAL, Event: api.Event_CREATE_CONTAINER, Plugin: "10-x", RefusedFields: []string{"env"}, Error: "denied"}, nil},
		{&recordpb.Record{Kind: recordpb.Kind_DROPPED, Dropped: 3}, nil},
	}
	for _, wr := range writes {
		if err := w.Write(wr.rec, wr.msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, testKey()) {
		t.Error("the file holds the key")
	}
	h, entries, err := readAll(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if h.GetSource() != SourcePlugin || h.GetNode() != "n1" || !h.GetRedaction().GetEnabled() || !bytes.Equal(h.GetRedaction().GetKeyId(), red.KeyID()) {
		t.Errorf("header %v", h)
	}
	if len(entries) != 5 {
		t.Fatalf("%d entries, want 5", len(entries))
	}
	for i, e := range entries {
		if e.GetSeq() != uint64(i+1) {
			t.Errorf("entry %d: seq %d", i, e.GetSeq())
		}
	}
	sync := entries[0].Message.(*api.SynchronizeRequest)
	if len(sync.Pods) != 1 || len(sync.Containers) != 1 || sync.More {
		t.Fatalf("snapshot %v", sync)
	}
	ctr := entries[1].Message.(*api.CreateContainerRequest).GetContainer()
	pod := entries[1].Message.(*api.CreateContainerRequest).GetPod()
	for _, s := range append(ctr.GetEnv(), pod.Annotations["secret"]) {
		if strings.Contains(s, "hunter2") {
			t.Errorf("value kept in clear: %q", s)
		}
	}
	if got := pod.Annotations["keep.example.com/x"]; got != "clear" {
		t.Errorf("kept annotation = %q", got)
	}
	if got, want := ctr.GetEnv()[0], "PASSWORD="+red.Env("PASSWORD", "hunter2"); got != want {
		t.Errorf("env %q, want %q", got, want)
	}
	if ctr.GetEnv()[1] == "PATH=/bin" {
		t.Error("PATH kept in clear")
	}
	rsp := entries[2].Message.(*api.CreateContainerResponse)
	if got := rsp.GetAdjust().GetEnv()[0].GetValue(); got != red.Env("TOKEN", "hunter2") {
		t.Errorf("adjustment env value %q", got)
	}
	if got := rsp.GetAdjust().GetEnv()[1].GetKey(); got != "-OLD" {
		t.Errorf("removal %q", got)
	}
	if entries[3].GetError() != "denied" || entries[3].Message != nil || entries[4].GetDropped() != 3 {
		t.Errorf("refusal %v, dropped %v", entries[3], entries[4])
	}
}

func TestRedactionHash(t *testing.T) {
	r1, _ := NewRedactor(testKey(), nil, nil)
	other := testKey()
	other[0] = 8
	r2, _ := NewRedactor(other, nil, nil)
	a := r1.Env("A", "v")
	for name, got := range map[string]string{
		"same name and value":   r1.Env("A", "v"),
		"other value":           r1.Env("A", "w"),
		"other name":            r1.Env("B", "v"),
		"annotation":            r1.Annotation("A", "v"),
		"other key":             r2.Env("A", "v"),
		"name/value boundaries": r1.Env("A=", "v"),
	} {
		if (got == a) != (name == "same name and value") {
			t.Errorf("%s: %q vs %q", name, got, a)
		}
	}
	if len(r1.Env("A", "")) != len(r1.Env("A", strings.Repeat("x", 1000))) {
		t.Error("the hash's length depends on the value's")
	}
	if bytes.Equal(r1.KeyID(), r2.KeyID()) {
		t.Error("different keys, same key ID")
	}
	var nilRed *Redactor
	if nilRed.Env("A", "v") != "v" {
		t.Error("a nil redactor redacts")
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	k1, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: %v, equal %v", err, bytes.Equal(k1, k2))
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", info.Mode().Perm())
	}
	os.Chmod(path, 0o644)
	if _, err := LoadKey(path); err == nil {
		t.Error("a key others can read was accepted")
	}
	link := filepath.Join(dir, "link")
	os.Symlink(path, link)
	if _, err := LoadKey(link); err == nil {
		t.Error("a key through a symbolic link was accepted")
	}
	os.WriteFile(filepath.Join(dir, "short"), []byte("x"), 0o600)
	if _, err := LoadKey(filepath.Join(dir, "short")); err == nil {
		t.Error("a short key was accepted")
	}
}

func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	rec, err := NewRecorder(RecorderConfig{Writer: WriterConfig{Path: path, MaxFileSize: 4 << 10, MaxFiles: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec.Configure(ctx, "", "rt", "1")
	rec.Synchronize(ctx, []*api.PodSandbox{testPod(0)}, []*api.Container{testCtr(0)})
	for i := 1; i < 600; i++ {
		rec.RunPodSandbox(ctx, testPod(i))
		c := testCtr(i)
		c.Args = []string{strings.Repeat(fmt.Sprint(i), 50)} // poorly compressible enough
		rec.CreateContainer(ctx, testPod(i), c)
		rec.PostCreateContainer(ctx, testPod(i), c)
		if i%2 == 0 {
			rec.RemoveContainer(ctx, testPod(i), c)
			rec.RemovePodSandbox(ctx, testPod(i))
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[2] != path || files[0] != path+".2" {
		t.Fatalf("files %v, want %s.2, %s.1, %s", files, path, path, path)
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Error("a fourth file was kept")
	}
	var last uint64
	for _, f := range files {
		h, entries, err := readAll(t, f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if info, _ := os.Stat(f); info.Size() > 16<<10+64<<10 {
			t.Errorf("%s: %d bytes, over the cap", f, info.Size())
		}
		if h.GetFileIndex() == 0 || h.GetRuntimeName() != "rt" {
			t.Errorf("%s: header %v", f, h)
		}
		// A rotated file starts with the state: live objects only.
		if entries[0].GetKind() != recordpb.Kind_STATE {
			t.Fatalf("%s starts with %v", f, entries[0].GetKind())
		}
		state := entries[0].Message.(*api.SynchronizeRequest)
		for _, c := range state.Containers {
			var n int
			fmt.Sscanf(c.GetId(), "ctr-%d", &n)
			if n%2 == 0 && n != 0 {
				// Removed before this file started unless removed after.
				if strings.Contains(c.GetEnv()[0], "hunter2") {
					t.Error("state not redacted")
				}
			}
		}
		if entries[0].GetSeq() <= last {
			t.Errorf("%s: seq %d after %d", f, entries[0].GetSeq(), last)
		}
		last = entries[len(entries)-1].GetSeq()
	}
}

func TestTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	w, err := NewWriter(WriterConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		w.Write(&recordpb.Record{Kind: recordpb.Kind_REQUEST, Event: api.Event_RUN_POD_SANDBOX}, &api.RunPodSandboxRequest{Pod: testPod(i)})
	}
	w.Flush() // as the recorder does every second; then it is killed
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, raw[:len(raw)-3], 0o600)
	_, entries, err := readAll(t, path)
	if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrFormat) {
		t.Fatalf("err %v, want ErrTruncated", err)
	}
	if len(entries) < 40 {
		t.Errorf("read %d whole records of 50 before the cut", len(entries))
	}
}

func TestReaderBounds(t *testing.T) {
	frame := func(size uint64) []byte {
		var b bytes.Buffer
		gz := newGzip(&b)
		io.WriteString(gz, Magic)
		gz.Write(uvarint(size))
		gz.Close()
		return b.Bytes()
	}
	if _, err := NewReader(bytes.NewReader(frame(MaxFrameSize + 1))); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized frame: %v", err)
	}
	if _, err := NewReader(strings.NewReader("not gzip")); !errors.Is(err, ErrFormat) {
		t.Errorf("not gzip: %v", err)
	}
	// A message with more values than allowed is refused before decoding.
	path := filepath.Join(t.TempDir(), "rec")
	w, _ := NewWriter(WriterConfig{Path: path})
	ctr := &api.Container{}
	for range MaxValues + 1 {
		ctr.Args = append(ctr.Args, "")
	}
	w.Write(&recordpb.Record{Kind: recordpb.Kind_REQUEST, Event: api.Event_CREATE_CONTAINER}, &api.CreateContainerRequest{Container: ctr})
	w.Close()
	if _, _, err := readAll(t, path); !errors.Is(err, ErrFormat) {
		t.Errorf("too many values: %v", err)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, n string
		want bool
	}{
		{"gpu-env.nrikit.dev/*", "gpu-env.nrikit.dev/visible-devices/pod", true},
		{"gpu-env.nrikit.dev/*", "gpu-env.nrikit.dev", false},
		{"*_TOKEN", "API_TOKEN", true},
		{"*_TOKEN", "API_TOKENS", false},
		{"A?C", "ABC", true},
		{"A?C", "AC", false},
		{"*", "", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
	} {
		if got := glob(c.p, c.n); got != c.want {
			t.Errorf("glob(%q, %q) = %v", c.p, c.n, got)
		}
	}
}
