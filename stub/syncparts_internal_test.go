package stub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// snapshotRecorder records the snapshot its Synchronize handler is given.
type snapshotRecorder struct {
	mu    sync.Mutex
	calls int
	ctrs  []string
}

func (r *snapshotRecorder) Synchronize(_ context.Context, _ []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	r.ctrs = r.ctrs[:0]
	for _, c := range ctrs {
		r.ctrs = append(r.ctrs, c.GetId())
	}
	return nil, nil
}

func (r *snapshotRecorder) RemovePodSandbox(context.Context, *api.PodSandbox) error { return nil }

// partCtx returns the context fastDecoding gives the dispatcher for the
// part req, whose decoding (containers ids set into req, in order) waits
// for release and fails with fail if that is not nil.
func partCtx(req *api.SynchronizeRequest, ids []string, release <-chan struct{}, fail error) context.Context {
	more := req.More
	return withDeferredPart(context.Background(), &deferredPart{decode: func() error {
		<-release
		if fail != nil {
			return fail
		}
		req.Reset()
		req.More = more
		for _, id := range ids {
			req.Containers = append(req.Containers, &api.Container{Id: id})
		}
		return nil
	}})
}

func newRecorderDispatcher(t *testing.T) (*dispatcher, *snapshotRecorder) {
	t.Helper()
	r := &snapshotRecorder{}
	c, err := newCore(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newDispatcher(c), r
}

// TestSyncPartsAnsweredBeforeDecoded: a part with more set is answered
// while it is still being decoded; the last part's answer waits for all of
// them, and the handler sees the containers in the order of the parts,
// whatever order their decoding finished in.
func TestSyncPartsAnsweredBeforeDecoded(t *testing.T) {
	d, r := newRecorderDispatcher(t)
	releases := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	for i := range 3 {
		req := &api.SynchronizeRequest{More: true}
		ctx := partCtx(req, []string{fmt.Sprintf("c%d-a", i), fmt.Sprintf("c%d-b", i)}, releases[i], nil)
		answered := make(chan error, 1)
		go func() {
			rsp, err := d.Synchronize(ctx, req)
			if err == nil && !rsp.GetMore() {
				err = errors.New("answer without more")
			}
			answered <- err
		}()
		select { // answered although its decoding waits
		case err := <-answered:
			if err != nil {
				t.Fatalf("part %d: %v", i+1, err)
			}
		case <-time.After(10 * time.Second):
			close(releases[i]) // lets it end
			t.Fatalf("part %d was not answered before it was decoded", i+1)
		}
	}
	last := &api.SynchronizeRequest{}
	done := make(chan error, 1)
	go func() {
		_, err := d.Synchronize(partCtx(last, []string{"c3"}, closedChan(), nil), last)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the last part was answered (%v) before the parts before it were decoded", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(releases[2]) // out of order
	close(releases[0])
	close(releases[1])
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the last part was not answered after every part was decoded")
	}
	want := "c0-a c0-b c1-a c1-b c2-a c2-b c3"
	if got := strings.Join(r.ctrs, " "); r.calls != 1 || got != want {
		t.Errorf("handler called %d times with %q, want once with %q", r.calls, got, want)
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestSyncPartFailsLastAnswer: a part that cannot be decoded fails the
// last part's answer, which names it; the handler is not called, and the
// next Synchronize starts afresh.
func TestSyncPartFailsLastAnswer(t *testing.T) {
	d, r := newRecorderDispatcher(t)
	bad := errors.New("bad part")
	for i, fail := range []error{nil, bad, nil} {
		req := &api.SynchronizeRequest{More: true}
		if _, err := d.Synchronize(partCtx(req, []string{fmt.Sprint("x", i)}, closedChan(), fail), req); err != nil {
			t.Fatal(err)
		}
	}
	last := &api.SynchronizeRequest{}
	_, err := d.Synchronize(partCtx(last, []string{"y"}, closedChan(), nil), last)
	if err == nil || !strings.Contains(err.Error(), "part 2 of 4") || !strings.Contains(err.Error(), "bad part") {
		t.Fatalf("last answer %v, want the error of part 2 of 4", err)
	}
	if r.calls != 0 {
		t.Errorf("handler called %d times after a failed part", r.calls)
	}

	// The runtime synchronizes again: only the new parts count.
	req := &api.SynchronizeRequest{More: true}
	if _, err := d.Synchronize(partCtx(req, []string{"n1"}, closedChan(), nil), req); err != nil {
		t.Fatal(err)
	}
	last = &api.SynchronizeRequest{}
	if _, err := d.Synchronize(partCtx(last, []string{"n2"}, closedChan(), nil), last); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.ctrs, " "); r.calls != 1 || got != "n1 n2" {
		t.Errorf("after the failure: handler called %d times with %q, want once with \"n1 n2\"", r.calls, got)
	}

	// The last part's own decoding fails.
	last = &api.SynchronizeRequest{}
	_, err = d.Synchronize(partCtx(last, nil, closedChan(), bad), last)
	if err == nil || !strings.Contains(err.Error(), "bad part") {
		t.Errorf("last part's own failure answered with %v", err)
	}
}

// TestSyncPartsWaitBounded: the last part's wait for the parts before it
// ends with its request's context.
func TestSyncPartsWaitBounded(t *testing.T) {
	d, r := newRecorderDispatcher(t)
	never := make(chan struct{})
	defer close(never) // lets the decoding goroutine end
	req := &api.SynchronizeRequest{More: true}
	if _, err := d.Synchronize(partCtx(req, []string{"a"}, never, nil), req); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	last := &api.SynchronizeRequest{}
	_, err := d.Synchronize(withDeferredPart(ctx, &deferredPart{}), last)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "part 1 of 2") {
		t.Errorf("answer %v, want the deadline, naming part 1 of 2", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the wait took %v after a 50ms deadline", took)
	}
	if r.calls != 0 {
		t.Errorf("handler called %d times", r.calls)
	}
}

// TestFastDecodingDefersSynchronize: through the interceptor, a
// Synchronize request reaches the service with only more decoded, and
// its decoding, run later, gives what proto.Unmarshal gives; other
// requests arrive decoded.
func TestFastDecodingDefersSynchronize(t *testing.T) {
	want := &api.SynchronizeRequest{
		Pods:       []*api.PodSandbox{{Id: "p", Name: "pod"}},
		Containers: []*api.Container{{Id: "c", PodSandboxId: "p", Env: []string{"A=1"}}},
		More:       true,
	}
	b, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	unmarshal := func(obj any) error { return proto.Unmarshal(b, obj.(proto.Message)) }
	syncInfo := &ttrpc.UnaryServerInfo{FullMethod: synchronizeMethod}
	var got *api.SynchronizeRequest
	var decode func() error
	_, err = fastDecoding(context.Background(), unmarshal, syncInfo, func(ctx context.Context, un func(any) error) (any, error) {
		got = &api.SynchronizeRequest{}
		if err := un(got); err != nil {
			return nil, err
		}
		decode = deferredPartOf(ctx)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !got.More || len(got.Containers) != 0 || decode == nil {
		t.Fatalf("handler got more=%v, %d containers, decode %v; want only more, the rest deferred",
			got.More, len(got.Containers), decode != nil)
	}
	if err := decode(); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("deferred decoding gave\n%v\nwant\n%v", got, want)
	}

	// Malformed at the top level: the interceptor fails at once.
	bad := append(b[:len(b):len(b)], 0x1a, 0x05) // field 3, bytes, truncated
	unmarshal = func(obj any) error { return proto.Unmarshal(bad, obj.(proto.Message)) }
	_, err = fastDecoding(context.Background(), unmarshal, syncInfo, func(_ context.Context, un func(any) error) (any, error) {
		return nil, un(&api.SynchronizeRequest{})
	})
	if err == nil || !strings.Contains(err.Error(), "decoding SynchronizeRequest") {
		t.Errorf("malformed request: %v, want a decoding error", err)
	}
}
