//go:build !wasip1

package wasmguest

import (
	"context"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

// idKeeper keeps the container ID its CreateContainer handler is given.
type idKeeper struct{ id string }

func (k *idKeeper) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	k.id = c.GetId()
	return nil, nil, nil
}

// inside reports whether s's bytes lie inside b.
func inside(s string, b []byte) bool {
	if s == "" || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p < lo+uintptr(len(b))
}

// TestOwnedRequestBuffer: on the export path (handle with owned, the
// host's request buffer) the decoded strings point into the request
// instead of being copied, which saves an allocation per string; through
// Handle, whose caller may reuse its bytes, they are copies.
func TestOwnedRequestBuffer(t *testing.T) {
	k := &idKeeper{}
	g, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Handle(FuncConfigure, nil); err != nil {
		t.Fatal(err)
	}
	pod := codecfixture.Pod(0)
	req, err := proto.Marshal(&api.CreateContainerRequest{Pod: pod, Container: codecfixture.Container(0, pod.Id)})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := g.Handle(FuncCreateContainer, req); err != nil {
		t.Fatal(err)
	}
	if k.id == "" || inside(k.id, req) {
		t.Fatalf("through Handle the handler got id %q inside the request's bytes, want a copy", k.id)
	}
	copied := testing.AllocsPerRun(20, func() {
		if _, err := g.Handle(FuncCreateContainer, req); err != nil {
			t.Fatal(err)
		}
	})

	if _, err := g.handle(FuncCreateContainer, req, true); err != nil {
		t.Fatal(err)
	}
	if !inside(k.id, req) {
		t.Fatalf("on the export path the handler got id %q as a copy, want it inside the request's bytes", k.id)
	}
	owned := testing.AllocsPerRun(20, func() {
		if _, err := g.handle(FuncCreateContainer, req, true); err != nil {
			t.Fatal(err)
		}
	})
	// The fixture's container and pod have dozens of strings.
	if owned > copied-30 {
		t.Errorf("a call allocates %v times with the request's buffer owned, %v with copies: want at least 30 fewer", owned, copied)
	}
	t.Logf("allocations per CreateContainer: %v with copies, %v owned", copied, owned)
}
