package wire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
	"google.golang.org/protobuf/proto"
)

// syncLimit is the Synchronize part limit of the tests: the runtime's.
const syncLimit = 1 << 20

// testPod and bigCtr are the tests' pods and containers: realistic ones
// (a container is about 1.3 KB encoded).
func testPod(i int) *api.PodSandbox { return codecfixture.Pod(i) }

func bigCtr(i int) *api.Container { return codecfixture.Container(i, fmt.Sprint("pod", i%100)) }

// snapshot returns n pods and m containers.
func snapshot(n, m int) ([]*api.PodSandbox, []*api.Container) {
	pods := make([]*api.PodSandbox, n)
	for i := range pods {
		pods[i] = testPod(i)
	}
	ctrs := make([]*api.Container, m)
	for i := range ctrs {
		ctrs[i] = bigCtr(i)
	}
	return pods, ctrs
}

// hugeCtr returns a container larger than a Synchronize part of limit
// bytes on its own.
func hugeCtr(limit int) *api.Container {
	c := bigCtr(99999)
	c.Annotations = map[string]string{"big": strings.Repeat("x", 2*limit)}
	return c
}

// TestSplitSync checks that SplitSync keeps every part within the limit
// (but for an object too large on its own), keeps every object, in
// order of kind, and marks every part but the last with More.
func TestSplitSync(t *testing.T) {
	pods, ctrs := snapshot(100, 3000)
	huge := hugeCtr(syncLimit)
	ctrs = append(ctrs, huge)

	parts := SplitSync(pods, ctrs, syncLimit)
	if len(parts) < 3 {
		t.Fatalf("%d parts, want several", len(parts))
	}
	var np, nc int
	for i, p := range parts {
		np += len(p.Pods)
		nc += len(p.Containers)
		if p.More != (i < len(parts)-1) {
			t.Errorf("part %d: more=%v", i, p.More)
		}
		size := proto.Size(p)
		if size > syncLimit && !(len(p.Containers) == 1 && p.Containers[0] == huge) {
			t.Errorf("part %d: %d bytes", i, size)
		}
	}
	if np != len(pods) || nc != len(ctrs) {
		t.Errorf("parts hold %d pods, %d containers; want %d, %d", np, nc, len(pods), len(ctrs))
	}
	if one := SplitSync(nil, nil, syncLimit); len(one) != 1 || one[0].More {
		t.Errorf("empty state: %v", one)
	}
}

// collectParts drains parts, decoding each request from its wire bytes
// as a plugin does.
func collectParts(t *testing.T, parts *SyncParts) []*api.SynchronizeRequest {
	t.Helper()
	defer parts.Stop()
	var got []*api.SynchronizeRequest
	for {
		req, more, ok, err := parts.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		dec := decoded(t, req)
		if more != dec.More {
			t.Errorf("part %d: next says more=%v, its request does not", len(got)+1, more)
		}
		if len(dec.ProtoReflect().GetUnknown()) != 0 {
			t.Errorf("decoded part has unknown fields")
		}
		got = append(got, dec)
	}
}

// TestSyncPartsMatchSplitSync checks that the parts encoded ahead for
// connected plugins carry, on the wire, exactly the requests of
// splitSync.
func TestSyncPartsMatchSplitSync(t *testing.T) {
	pods, ctrs := snapshot(50, 600)
	// An object larger than a part of 2,048 bytes, amid the others.
	withHuge := append(slices.Clone(ctrs[:15]), append([]*api.Container{hugeCtr(2048)}, ctrs[15:30]...)...)
	same := []*api.Container{ctrs[0], ctrs[0], ctrs[0], ctrs[0]}

	for _, tc := range []struct {
		name        string
		pods        []*api.PodSandbox
		ctrs        []*api.Container
		limit       int
		wantSeveral bool
	}{
		{"empty", nil, nil, syncLimit, false},
		{"pods only", pods, nil, syncLimit, false},
		{"many", pods, ctrs, syncLimit / 4, true},
		{"small limit, with an oversized object", pods[:5], withHuge, 2048, true},
		// Two fields and one byte: a part holds one container, as its
		// "more" (two bytes) must fit too.
		{"tight limit", nil, same, 2*fieldSize(proto.Size(same[0])) + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := SplitSync(tc.pods, tc.ctrs, tc.limit)
			got := collectParts(t, EncodedSyncParts(tc.pods, tc.ctrs, tc.limit))
			if len(got) != len(want) {
				t.Fatalf("%d parts, SplitSync makes %d", len(got), len(want))
			}
			for i, p := range got {
				if n := proto.Size(p); n > tc.limit && len(p.Pods)+len(p.Containers) > 1 {
					t.Errorf("part %d is %d bytes, above the limit of %d", i, n, tc.limit)
				}
			}
			if tc.wantSeveral && len(got) < 2 {
				t.Errorf("%d parts, want several", len(got))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("part %d differs from SplitSync's (%d/%d pods, %d/%d containers, more %v/%v)", i,
						len(got[i].Pods), len(want[i].Pods), len(got[i].Containers), len(want[i].Containers),
						got[i].More, want[i].More)
				}
			}
			builtin := collectParts(t, PlainSyncParts(tc.pods, tc.ctrs, tc.limit))
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
	for i := range 500 {
		ctrs = append(ctrs, bigCtr(i))
	}
	parts := EncodedSyncParts(nil, ctrs, 4096)
	if _, _, ok, err := parts.Next(); !ok || err != nil {
		t.Fatalf("first part: %v %v", ok, err)
	}
	parts.Stop() // returns once the encoder goroutine has ended
	parts.Stop()
}

// decoded returns req as a plugin decodes it from its wire bytes.
func decoded(t *testing.T, req *api.SynchronizeRequest) *api.SynchronizeRequest {
	t.Helper()
	buf, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	dec := &api.SynchronizeRequest{}
	if err := proto.Unmarshal(buf, dec); err != nil {
		t.Fatal(err)
	}
	return dec
}
