package adaptation

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

func TestEncodedOnce(t *testing.T) {
	req := &api.PostStartContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	want, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	wire := encodedOnce(req)
	if wire == req {
		t.Fatal("encodedOnce returned the request itself")
	}
	if wire.GetPod() != nil || wire.GetContainer() != nil {
		t.Error("the encoded copy has fields set")
	}
	got, err := proto.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	// Map entries are encoded in random order, so compare sizes and what
	// the bytes decode to.
	if len(got) != len(want) {
		t.Fatalf("encoded copy marshals to %d bytes, the request to %d", len(got), len(want))
	}
	var dec api.PostStartContainerRequest
	if err := proto.Unmarshal(got, &dec); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&dec, req) {
		t.Error("the encoded copy does not decode to the request")
	}
	var none *api.PostStartContainerRequest
	if encodedOnce(none) != none {
		t.Error("a nil request is not returned as it is")
	}
}
