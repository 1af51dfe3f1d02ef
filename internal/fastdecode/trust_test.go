package fastdecode

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// trusted is the decoder under test in this file.
var trusted = UnmarshalOptions{TrustUTF8: true}.Unmarshal

// diffTrusted checks the TrustUTF8 decoder against proto.Unmarshal: where
// protobuf-go succeeds it must agree (see diffDecode), and where
// protobuf-go fails for anything but invalid UTF-8 it must fail too. ""
// means it holds.
func diffTrusted(typ proto.Message, b []byte) string {
	werr := proto.Unmarshal(b, newOf(typ))
	if werr == nil {
		return diffDecode(typ, b, trusted)
	}
	var u interface{ InvalidUTF8() bool }
	if errors.As(werr, &u) && u.InvalidUTF8() {
		return ""
	}
	if err := trusted(bytes.Clone(b), newOf(typ)); err == nil {
		return fmt.Sprintf("%s: proto.Unmarshal error %v, TrustUTF8 decoder no error", name(typ), werr)
	}
	return ""
}

// TestTrustUTF8 checks that TrustUTF8 changes nothing but the UTF-8 check
// of the hand-decoded strings: every case of TestDifferential holds
// (diffTrusted), hand-decoded strings with invalid UTF-8 are copied as
// they are, and fields protobuf-go decodes are still checked.
func TestTrustUTF8(t *testing.T) {
	for _, tc := range allCases() {
		if d := diffTrusted(tc.typ, tc.b); d != "" {
			t.Errorf("%s: %s", tc.name, d)
		}
	}

	pod := &api.PodSandbox{}
	in := cat(str(1, bad), entry(6, "k", bad), entry(5, bad, "v"), str(10, bad))
	if err := trusted(in, pod); err != nil {
		t.Fatalf("pod with invalid UTF-8: %v", err)
	}
	if pod.Id != bad || pod.Annotations["k"] != bad || pod.Labels[bad] != "v" || len(pod.Ips) != 1 || pod.Ips[0] != bad {
		t.Errorf("pod %v: invalid UTF-8 not copied as it is", pod)
	}
	ctr := &api.CreateContainerRequest{}
	if err := trusted(cat(byt(2, str(3, bad), str(8, bad), byt(9, str(1, bad), str(4, bad)))), ctr); err != nil {
		t.Fatalf("container with invalid UTF-8: %v", err)
	}
	c := ctr.GetContainer()
	if c.GetName() != bad || len(c.GetEnv()) != 1 || c.GetEnv()[0] != bad || len(c.GetMounts()) != 1 ||
		c.GetMounts()[0].GetDestination() != bad || c.GetMounts()[0].GetOptions()[0] != bad {
		t.Errorf("container %v: invalid UTF-8 not copied as it is", c)
	}
	// The container's image is decoded by protobuf-go, which checks.
	if err := trusted(byt(22, str(1, bad)), &api.Container{}); err == nil {
		t.Error("invalid UTF-8 inside image accepted: protobuf-go's fields must still be checked")
	}
	// The linux subtrees are decoded by hand.
	lp := &api.PodSandbox{}
	if err := trusted(byt(8, str(3, bad), byt(5, str(2, bad)), byt(6, byt(2, str(6, bad)))), lp); err != nil {
		t.Fatalf("pod linux with invalid UTF-8: %v", err)
	}
	if l := lp.GetLinux(); l.GetCgroupParent() != bad || l.GetNamespaces()[0].GetPath() != bad || l.GetResources().GetCpu().GetCpus() != bad {
		t.Errorf("pod linux %v: invalid UTF-8 not copied as it is", l)
	}
	// The default still checks.
	if err := Unmarshal(str(1, bad), &api.PodSandbox{}); err == nil {
		t.Error("Unmarshal accepted invalid UTF-8")
	}
}
