package adaptation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wirelimit"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// The tests of this file check the bounds on what a plugin's messages
// hold (bounds.go): each sends what decodes into hundreds of MiB and
// checks that the runtime refuses it, as that plugin's failure, having
// allocated a few MiB. (Before the bounds, the same messages allocated
// 170-600 MiB: see the figures in each test's log.)

// emptyEntries returns n occurrences of field num holding an empty
// message: 2 bytes each, a Go struct and its pointer once decoded.
func emptyEntries(num protowire.Number, n int) []byte {
	return bytes.Repeat(protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), nil), n)
}

// nearMax is how many empty entries fit in one message, its envelope
// included.
const nearMax = (MaxMessageSize - 64<<10) / 2

// allocatedBy returns the heap bytes the process allocated while f ran
// (the test's plugin side included).
func allocatedBy(f func()) uint64 {
	before := heapAllocated()
	f()
	return heapAllocated() - before
}

// boundsRuntime is a runtime with opts whose log the test can read.
func boundsRuntime(t *testing.T, opts ...Option) *testRuntime {
	t.Helper()
	rt := newTestRuntime(t, nil, append([]Option{WithDisabledExternalConnections()}, opts...)...)
	rt.store.AddPod(testPod(0))
	rt.start(t)
	return rt
}

// TestAnswerBoundsBeforeDecoding: a connected plugin's CreateContainer
// answer of 4 MiB of empty updates (2 million; decoding them allocated 554
// MiB) is refused before it is decoded: above the max answer size, or,
// where that allows 4 MiB, above MaxUpdatesPerMessage. The refusal is the
// plugin's failure, handled by its failure policy; it stays connected.
func TestAnswerBoundsBeforeDecoding(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxAnswer  int
		failReq    bool
		wantSize   bool // an *AnswerSizeError, else an *AnswerCountError
		wantDetail string
	}{
		{"size", DefaultMaxAnswerSize, true, true, "above the limit of 1048576"},
		{"updates", MaxMessageSize, true, false, "holds more than 1024 update entries"},
		{"updates, default policy", MaxMessageSize, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []Option{WithMaxAnswerSize(tc.maxAnswer)}
			if tc.failReq {
				opts = append(opts, WithPluginOverride("10-raw", PluginPolicy{FailurePolicy: &api.FailurePolicy{FailRequest: true}}))
			}
			rt := boundsRuntime(t, opts...)
			_, err := connectRaw(t, rt.a, "10", "raw", func(m string) (proto.Message, error) {
				if m == "CreateContainer" {
					return rawAnswer(&api.CreateContainerResponse{}, emptyEntries(2, nearMax)), nil
				}
				return nil, nil
			})
			must(t, err)
			var cerr error
			took := allocatedBy(func() {
				_, cerr = rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
			})
			t.Logf("CreateContainer answered with %d empty updates: allocated %.1f MiB", nearMax, float64(took)/(1<<20))
			if took > 64<<20 {
				t.Errorf("allocated %d MiB, want the answer refused before it is decoded (under 64 MiB, mostly the plugin's side)", took>>20)
			}
			var (
				perr  *PluginError
				size  *AnswerSizeError
				count *AnswerCountError
			)
			switch {
			case !tc.failReq:
				if cerr != nil {
					t.Fatalf("CreateContainer: %v, want it to go on without the plugin's answer", cerr)
				}
				rt.logs.wait(t, "the oversize log line", func(r logRecord) bool {
					return r.msg == "plugin answer too large, not using it" && r.attrs["plugin"] == "10-raw" &&
						strings.Contains(r.attrs["error"], "holds more than 1024 update entries")
				})
			case !errors.As(cerr, &perr) || perr.Kind != FailureOversize || perr.Plugin != "10-raw":
				t.Fatalf("CreateContainer: %v, want an oversize failure of 10-raw", cerr)
			case tc.wantSize && (!errors.As(cerr, &size) || size.Limit != DefaultMaxAnswerSize || size.Size < nearMax):
				t.Fatalf("CreateContainer: %v, want an *AnswerSizeError", cerr)
			case !tc.wantSize && (!errors.As(cerr, &count) || count.Limit != MaxUpdatesPerMessage || count.Message != "CreateContainerResponse"):
				t.Fatalf("CreateContainer: %v, want an *AnswerCountError", cerr)
			case !strings.Contains(cerr.Error(), tc.wantDetail) || !strings.Contains(cerr.Error(), `"10-raw"`):
				t.Fatalf("error %q should name the plugin and say %q", cerr, tc.wantDetail)
			}
			if info, ok := rt.plugin("10-raw"); !ok || info.State != StateActive {
				t.Errorf("the plugin was not kept: %+v", rt.a.Plugins())
			}
		})
	}
}

// syncUpdates is a Synchronize answer updating n of the test containers
// (ctrID).
func syncUpdates(n int) *api.SynchronizeResponse {
	rsp := &api.SynchronizeResponse{}
	for i := range n {
		rsp.Update = append(rsp.Update, &api.ContainerUpdate{ContainerId: ctrID(i % MaxUpdatesPerMessage),
			Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(512)}}}})
	}
	return rsp
}

// syncRuntime is a runtime with MaxUpdatesPerMessage containers.
func syncRuntime(t *testing.T) *testRuntime {
	rt := boundsRuntime(t)
	for i := range MaxUpdatesPerMessage {
		rt.store.AddCtr(&api.Container{Id: ctrID(i), PodSandboxId: "pod0", Name: "c"})
	}
	return rt
}

// TestSynchronizeAnswerOverCount: a Synchronize answer with more updates
// than MaxUpdatesPerMessage fails the plugin's synchronization: it is
// disconnected, naming the bound, and none of its updates is applied.
func TestSynchronizeAnswerOverCount(t *testing.T) {
	rt := syncRuntime(t)
	_, err := connectRaw(t, rt.a, "10", "many", func(m string) (proto.Message, error) {
		if m == "Synchronize" {
			return syncUpdates(MaxUpdatesPerMessage + 1), nil
		}
		return nil, nil
	})
	if err == nil {
		rt.waitGone(t, "10-many")
	}
	rt.logs.wait(t, "the disconnect of 10-many", func(r logRecord) bool {
		return r.msg == "plugin disconnected" && r.attrs["plugin"] == "10-many" &&
			strings.Contains(r.attrs["reason"], "its answer (SynchronizeResponse) holds more than 1024 update entries")
	})
	if n := rt.store.UpdateCalls(); n != 0 {
		t.Errorf("%d update calls, want none", n)
	}
}

// TestLargeSynchronizeAnswer: a Synchronize answer at the bounds, larger
// than the 64 KiB a plugin may send before it is configured, is taken.
// (Before, the Read of the plugin's connection that began before
// Configure's answer arrived applied the 64 KiB limit to the Synchronize
// answer, and the plugin was disconnected.)
func TestLargeSynchronizeAnswer(t *testing.T) {
	rt := syncRuntime(t)
	rsp := syncUpdates(MaxUpdatesPerMessage)
	if n := proto.Size(rsp); n <= preConfigureLimit {
		t.Fatalf("the answer is %d bytes, want it above %d", n, preConfigureLimit)
	}
	_, err := connectRaw(t, rt.a, "20", "bound", func(m string) (proto.Message, error) {
		if m == "Synchronize" {
			return rsp, nil
		}
		return nil, nil
	})
	must(t, err)
	waitState(t, rt.a, "20-bound", StateActive)
	deadline := ctxT(t)
	for rt.store.UpdateCalls() == 0 && deadline.Err() == nil {
		pause(deadline)
	}
	if ups, _ := rt.store.Updates(); len(ups) != 1 || len(ups[0]) != MaxUpdatesPerMessage {
		t.Errorf("updates applied: %d calls, want one of %d updates", len(ups), MaxUpdatesPerMessage)
	}
}

// ctrID is the ID of test container i, as long as a container runtime's.
func ctrID(i int) string { return fmt.Sprintf("%064x", i) }

// TestUpdateContainersBounds: a plugin's UpdateContainers request above
// the bounds is refused (RESOURCE_EXHAUSTED, naming the bound) without
// being decoded, and nothing of it applied; the plugin stays connected
// and its requests at the bounds are taken.
func TestUpdateContainersBounds(t *testing.T) {
	rt := boundsRuntime(t)
	peer, err := connectRaw(t, rt.a, "10", "raw", nil)
	must(t, err)
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"updates", emptyEntries(1, MaxUpdatesPerMessage+1), "UpdateContainersRequest holds more than 1024 update entries"},
		{"evictions", emptyEntries(2, MaxEvictionsPerMessage+1), "UpdateContainersRequest holds more than 1024 evict entries"},
		{"4 MiB of updates", emptyEntries(1, nearMax), "UpdateContainersRequest holds more than 1024 update entries"},
	} {
		req := rawAnswer(&api.UpdateContainersRequest{}, tc.raw).(*api.UpdateContainersRequest)
		var uerr error
		took := allocatedBy(func() { _, uerr = peer.Runtime.UpdateContainers(ctxT(t), req) })
		t.Logf("%s: allocated %.1f MiB", tc.name, float64(took)/(1<<20))
		if status.Code(uerr) != codes.ResourceExhausted || !strings.Contains(uerr.Error(), tc.want) {
			t.Errorf("%s: UpdateContainers: %v, want RESOURCE_EXHAUSTED saying %q", tc.name, uerr, tc.want)
		}
		if took > 48<<20 {
			t.Errorf("%s: allocated %d MiB, want the request refused before it is decoded", tc.name, took>>20)
		}
	}
	if n := rt.store.UpdateCalls(); n != 0 {
		t.Errorf("%d update calls reached the runtime, want none", n)
	}
	rt.logs.wait(t, "the refusal's log line", func(r logRecord) bool {
		return r.msg == "refusing plugin request: it holds more than the runtime decodes from one message" && r.attrs["plugin"] == "10-raw"
	})
	ups := make([]*api.ContainerUpdate, MaxUpdatesPerMessage)
	for i := range ups {
		ups[i] = &api.ContainerUpdate{ContainerId: ctrID(i)}
	}
	if _, err := peer.Runtime.UpdateContainers(ctxT(t), &api.UpdateContainersRequest{Update: ups}); err != nil {
		t.Fatalf("UpdateContainers at the bound: %v", err)
	}
	if got, _ := rt.store.Updates(); len(got) != 1 || len(got[0]) != MaxUpdatesPerMessage {
		t.Errorf("updates applied: %d calls, want one of %d updates", len(got), MaxUpdatesPerMessage)
	}
}

// TestEnvelopeBounds: ttrpc's envelope around a plugin's message
// (a response's status details, a request's metadata) is checked before
// ttrpc decodes it: one that holds more than 1,024 values (here 4,096
// status details, or metadata entries) closes the plugin's connection,
// with the reason logged. (Before, the runtime decoded them all: 4 MiB of
// empty status details into 177 MiB, see wirelimit's
// TestDecodedWorstCase.)
func TestEnvelopeBounds(t *testing.T) {
	t.Run("status details", func(t *testing.T) {
		rt := boundsRuntime(t)
		_, err := connectRaw(t, rt.a, "10", "raw", func(m string) (proto.Message, error) {
			if m == "RunPodSandbox" {
				d := make([]*anypb.Any, 4096)
				for i := range d {
					d[i] = &anypb.Any{}
				}
				return nil, status.FromProto(&spb.Status{Code: int32(codes.InvalidArgument), Details: d}).Err()
			}
			return nil, nil
		})
		must(t, err)
		// The plugin is lost; by its (default) policy the request goes on.
		must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: testPod(1)}))
		rt.logs.wait(t, "the violation's log line", func(r logRecord) bool {
			return r.msg == "closing plugin connection: the plugin broke a bound" && r.attrs["plugin"] == "10-raw" &&
				strings.Contains(r.attrs["error"], "Response holds more than 1024 values")
		})
		rt.waitGone(t, "10-raw")
	})
	t.Run("request metadata", func(t *testing.T) {
		rt := boundsRuntime(t)
		peer, err := connectRaw(t, rt.a, "10", "raw", nil)
		must(t, err)
		ctx := ttrpc.WithMetadata(ctxT(t), ttrpc.MD{"k": make([]string, 4096)})
		if _, uerr := peer.Runtime.UpdateContainers(ctx, &api.UpdateContainersRequest{}); uerr == nil {
			t.Error("UpdateContainers with 4,096 metadata entries succeeded")
		}
		rt.logs.wait(t, "the violation's log line", func(r logRecord) bool {
			return r.msg == "closing plugin connection: the plugin broke a bound" && r.attrs["plugin"] == "10-raw" &&
				strings.Contains(r.attrs["error"], "Request holds more than 1024 values")
		})
		rt.waitGone(t, "10-raw")
	})
}

// pause waits a little, or until ctx ends.
func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-shortTick():
	}
}

// shortTick returns a channel that fires after 10 ms.
func shortTick() <-chan time.Time { return time.After(10 * time.Millisecond) }

// TestUpdateContainersDecodedOneAtATime: a plugin's UpdateContainers
// requests are decoded one at a time. With the runtime's UpdateFunc
// holding the first, 7 more requests, each of 62 KiB that decodes into
// 3 MiB (1,024 updates of 28 device entries: within the bounds), are
// held as their bytes: the live heap grows by at most about one decoded
// request (measured: 0.4 MiB). (Before, the server decoded all 8 at once,
// ahead of the plugin's update lock: 22 MiB.)
func TestUpdateContainersDecodedOneAtATime(t *testing.T) {
	const requests = 8
	release := make(chan struct{})
	entered := make(chan struct{}, requests)
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		entered <- struct{}{}
		<-release
		return nil, nil
	}
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return nil, nil, nil },
		update, WithPluginDir(""), WithDisabledExternalConnections(), WithLogger(logs.logger()))
	must(t, err)
	must(t, a.Start(ctxT(t)))
	stopAtCleanup(t, a, logs)
	peer, err := connectRaw(t, a, "10", "raw", nil)
	must(t, err)
	a.mu.Lock()
	gate := a.findLocked("10-raw").ep.(*connEndpoint).gate
	a.mu.Unlock()

	// update{linux{resources{devices × 28}}} × 1,024, 31,744 values.
	devices := emptyEntries(7, 28)
	var raw []byte
	for range MaxUpdatesPerMessage {
		resources := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), devices)
		u := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), resources)
		raw = protowire.AppendBytes(protowire.AppendTag(raw, 1, protowire.BytesType), u)
	}
	req := rawAnswer(&api.UpdateContainersRequest{}, raw).(*api.UpdateContainersRequest)
	// What decoding one request allocates (it keeps nearly all of it): the
	// least of three, as allocation counts only grow. (A difference of live
	// heaps, used before, was 0 on CI where a stopped test's connections
	// freed their memory meanwhile.)
	var one uint64
	for i := range 3 {
		took := allocatedBy(func() {
			m := &api.UpdateContainersRequest{}
			must(t, proto.Unmarshal(raw, m))
			runtime.KeepAlive(m)
		})
		if i == 0 || took < one {
			one = took
		}
	}

	base := liveHeap()
	done := make(chan error, requests)
	for range requests {
		go func() {
			_, err := peer.Runtime.UpdateContainers(ctxT(t), req)
			done <- err
		}()
	}
	<-entered
	deadline := ctxT(t)
	for gate.Unanswered() < requests && deadline.Err() == nil {
		pause(deadline)
	}
	time.Sleep(200 * time.Millisecond) // for whatever decodes what it read
	grown := liveHeap() - min(base, liveHeap())
	close(release)
	for range requests {
		must(t, <-done)
	}
	t.Logf("%d requests of %d bytes, each decoding into %.1f MiB, one being handled: live heap +%.1f MiB",
		requests, len(raw), float64(one)/(1<<20), float64(grown)/(1<<20))
	if grown > 3*one {
		t.Errorf("live heap grew by %.1f MiB, want about one decoded request (%.1f MiB), not %d", float64(grown)/(1<<20), float64(one)/(1<<20), requests)
	}
}

// liveHeap returns the live heap after a GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestOversizeAfterDeadline: an answer refused for its size or content is
// the plugin's oversize failure even when the request's deadline passed
// while it arrived (a 3.9 MB answer under a 500 ms timeout on a busy
// machine was reported as a timeout).
func TestOversizeAfterDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	a := &Adaptation{}
	for _, err := range []error{
		&wirelimit.SizeError{Size: 2, Limit: 1},
		&wirelimit.LimitError{Message: "nri.pkg.api.v1alpha1.CreateContainerResponse", What: "values", Limit: 1},
	} {
		if kind := a.classifyErr(nil, ctx, err); kind != FailureOversize {
			t.Errorf("%v after the deadline: %v, want oversize", err, kind)
		}
	}
}
