package schema

import (
	"strings"
	"testing"

	upstream "github.com/containerd/nri/pkg/api"
	ours "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/wirecheck"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

var rules = wirecheck.Rules{ExtensionMin: ours.ExtensionFieldMin, ExtensionMax: ours.ExtensionFieldMax}

// TestSchemaMatchesUpstreamModule compares the descriptors compiled into
// upstream's Go package (github.com/containerd/nri/pkg/api v0.12.5, from the
// module cache) with ours: every upstream service, method, message, field
// number and type must exist identically, and our additions must be new
// messages or fields numbered 1000-1999.
func TestSchemaMatchesUpstreamModule(t *testing.T) {
	if diffs := wirecheck.Compare(upstream.File_pkg_api_api_proto, ours.File_nrikit_nri_proto, rules); len(diffs) != 0 {
		t.Fatalf("nrikit's schema is not wire-compatible with upstream v0.12.5:\n%s", strings.Join(diffs, "\n"))
	}
}

// TestSchemaReverseDirection checks the other direction: ours, with the
// extensions stripped, is exactly upstream (nothing of ours is missing
// upstream except extensions), so a message encoded by upstream decodes
// into ours and back without loss.
func TestSchemaReverseDirection(t *testing.T) {
	stripped := stripExtensions(t, ours.File_nrikit_nri_proto)
	if diffs := wirecheck.Compare(stripped, upstream.File_pkg_api_api_proto, wirecheck.Rules{}); len(diffs) != 0 {
		t.Fatalf("upstream lacks parts of nrikit's non-extension schema:\n%s", strings.Join(diffs, "\n"))
	}
}

// stripExtensions returns fd without fields numbered in the extension
// range, and without the messages only extensions refer to.
func stripExtensions(t *testing.T, fd protoreflect.FileDescriptor) protoreflect.FileDescriptor {
	t.Helper()
	fdp := protodesc.ToFileDescriptorProto(fd)
	keep := fdp.MessageType[:0]
	for _, m := range fdp.MessageType {
		if upstream.File_pkg_api_api_proto.Messages().ByName(protoreflect.Name(m.GetName())) == nil {
			continue // an nrikit-only message
		}
		fields := m.Field[:0]
		for _, f := range m.Field {
			if f.GetNumber() < ours.ExtensionFieldMin {
				fields = append(fields, f)
			}
		}
		m.Field = fields
		keep = append(keep, m)
	}
	fdp.MessageType = keep
	fdp.Name = proto.String("stripped.proto")
	out, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatalf("building stripped descriptor: %v", err)
	}
	return out
}

// TestCrossDecoding encodes a message carrying every extension with our
// types and decodes it with upstream's generated code, then re-encodes it
// with upstream's and decodes with ours: upstream must see every upstream
// field unchanged and ignore the extensions.
func TestCrossDecoding(t *testing.T) {
	req := &ours.ConfigureRequest{
		Config: "cfg", RuntimeName: "nrikit", RuntimeVersion: "v1", RegistrationTimeout: 5000,
		RequestTimeout: 2000, NRIVersion: "v0.12.5", SupportedEvents: int32(ours.AllEvents),
		MaxRequestTimeout: 30000, SynchronizeTimeout: 10000,
	}
	raw, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var up upstream.ConfigureRequest
	if err := up.UnmarshalVT(raw); err != nil {
		t.Fatalf("upstream decoding our ConfigureRequest: %v", err)
	}
	if up.Config != "cfg" || up.RuntimeName != "nrikit" || up.RequestTimeout != 2000 || up.NRIVersion != "v0.12.5" {
		t.Fatalf("upstream decoded %+v", &up)
	}
	back, err := up.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	var again ours.ConfigureRequest
	if err := proto.Unmarshal(back, &again); err != nil {
		t.Fatal(err)
	}
	if again.GetSupportedEvents() != 0 {
		// upstream's vtproto decoder drops unknown fields, so the
		// extension must be absent, not corrupted.
		t.Logf("upstream preserved unknown field supported_events=%#x", again.GetSupportedEvents())
	}
	if again.GetRuntimeName() != "nrikit" || again.GetRegistrationTimeout() != 5000 {
		t.Fatalf("round trip through upstream lost fields: %+v", &again)
	}
}
