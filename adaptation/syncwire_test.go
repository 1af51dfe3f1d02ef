package adaptation

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// collectParts drains parts, decoding each request from its wire bytes
// as a plugin does.
func collectParts(t *testing.T, parts *syncParts) []*api.SynchronizeRequest {
	t.Helper()
	defer parts.stop()
	var got []*api.SynchronizeRequest
	for {
		req, more, ok, err := parts.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		if more != (req.More || moreOnWire(t, req)) {
			t.Errorf("part %d: next says more=%v, its request does not", len(got)+1, more)
		}
		buf, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var dec api.SynchronizeRequest
		if err := proto.Unmarshal(buf, &dec); err != nil {
			t.Fatal(err)
		}
		if len(dec.ProtoReflect().GetUnknown()) != 0 {
			t.Errorf("decoded part has unknown fields")
		}
		got = append(got, &dec)
	}
}

// TestSyncPartsMatchSplitSync checks that the parts encoded ahead for
// connected plugins carry, on the wire, exactly the requests of
// splitSync.
func TestSyncPartsMatchSplitSync(t *testing.T) {
	var pods []*api.PodSandbox
	for i := range 50 {
		pods = append(pods, testPod(i))
	}
	var ctrs []*api.Container
	for i := range 8000 {
		ctrs = append(ctrs, bigCtr(i))
	}
	huge := testCtr(0, 99999)
	huge.Annotations = map[string]string{"big": strings.Repeat("x", 2*MaxSyncMessageSize)}
	ctrs = append(ctrs[:4000:4000], append([]*api.Container{huge}, ctrs[4000:]...)...)

	for _, tc := range []struct {
		name        string
		pods        []*api.PodSandbox
		ctrs        []*api.Container
		limit       int
		wantSeveral bool
	}{
		{"empty", nil, nil, MaxSyncMessageSize, false},
		{"pods only", pods, nil, MaxSyncMessageSize, false},
		{"many, with an oversized object", pods, ctrs, MaxSyncMessageSize, true},
		{"small limit", pods[:5], ctrs[:30], 2048, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := splitSync(tc.pods, tc.ctrs, tc.limit)
			got := collectParts(t, encodedSyncParts(tc.pods, tc.ctrs, tc.limit))
			if len(got) != len(want) {
				t.Fatalf("%d parts, splitSync makes %d", len(got), len(want))
			}
			if tc.wantSeveral && len(got) < 2 {
				t.Errorf("%d parts, want several", len(got))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("part %d differs from splitSync's (%d/%d pods, %d/%d containers, more %v/%v)", i,
						len(got[i].Pods), len(want[i].Pods), len(got[i].Containers), len(want[i].Containers),
						got[i].More, want[i].More)
				}
			}
			builtin := collectParts(t, plainSyncParts(tc.pods, tc.ctrs, tc.limit))
			if len(builtin) != len(want) {
				t.Errorf("builtin: %d parts, want %d", len(builtin), len(want))
			}
		})
	}
}

// TestSyncPartsStop checks that stopping after the first part ends the
// encoder.
func TestSyncPartsStop(t *testing.T) {
	var ctrs []*api.Container
	for i := range 5000 {
		ctrs = append(ctrs, bigCtr(i))
	}
	parts := encodedSyncParts(nil, ctrs, 4096)
	if _, _, ok, err := parts.next(); !ok || err != nil {
		t.Fatalf("first part: %v %v", ok, err)
	}
	parts.stop() // returns once the encoder goroutine has ended
	parts.stop()
}

// moreOnWire reports whether req's encoding sets more.
func moreOnWire(t *testing.T, req *api.SynchronizeRequest) bool {
	t.Helper()
	buf, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var dec api.SynchronizeRequest
	if err := proto.Unmarshal(buf, &dec); err != nil {
		t.Fatal(err)
	}
	return dec.More
}
