package api

import (
	"os"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/wirecheck"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// loadUpstream reads the compiled schema of containerd/nri v0.12.5 that
// `make upstream-descriptor` writes into testdata.
func loadUpstream(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	raw, err := os.ReadFile("testdata/upstream-v0.12.5.binpb")
	if err != nil {
		t.Fatalf("reading upstream descriptor: %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatalf("decoding upstream descriptor: %v", err)
	}
	if len(set.File) != 1 || set.File[0].GetName() != "pkg/api/api.proto" {
		t.Fatalf("upstream descriptor set: want exactly pkg/api/api.proto, got %d files", len(set.File))
	}
	fd, err := protodesc.NewFile(set.File[0], nil)
	if err != nil {
		t.Fatalf("building upstream descriptor: %v", err)
	}
	return fd
}

var extensionRules = wirecheck.Rules{ExtensionMin: ExtensionFieldMin, ExtensionMax: ExtensionFieldMax}

func TestWireIdentityWithUpstream(t *testing.T) {
	upstream := loadUpstream(t)
	if diffs := wirecheck.Compare(upstream, File_nrikit_nri_proto, extensionRules); len(diffs) != 0 {
		t.Fatalf("schema is not wire-identical to containerd/nri v0.12.5:\n%s", strings.Join(diffs, "\n"))
	}
}

// TestSchemaShape enumerates services and methods from our descriptors and
// checks the ttrpc method paths that peers call.
func TestSchemaShape(t *testing.T) {
	fd := File_nrikit_nri_proto
	if got := string(fd.Package()); got != "nri.pkg.api.v1alpha1" {
		t.Fatalf("package = %q", got)
	}
	want := map[string][]string{
		RuntimeServiceName: {"RegisterPlugin", "UpdateContainers"},
		PluginServiceName: {"Configure", "Synchronize", "Shutdown", "RunPodSandbox", "UpdatePodSandbox",
			"PostUpdatePodSandbox", "StopPodSandbox", "RemovePodSandbox", "CreateContainer", "PostCreateContainer",
			"StartContainer", "PostStartContainer", "UpdateContainer", "PostUpdateContainer", "StopContainer",
			"RemoveContainer", "StateChange", "ValidateContainerAdjustment"},
	}
	for svc, methods := range want {
		sd := fd.Services().ByName(protoreflect.FullName(svc).Name())
		if sd == nil || string(sd.FullName()) != svc {
			t.Fatalf("service %s missing", svc)
		}
		if sd.Methods().Len() != len(methods) {
			t.Errorf("service %s has %d methods, want %d", svc, sd.Methods().Len(), len(methods))
		}
		for _, m := range methods {
			if sd.Methods().ByName(protoreflect.Name(m)) == nil {
				t.Errorf("method /%s/%s missing", svc, m)
			}
		}
	}
	// Every event except UNKNOWN and LAST has a Plugin method of its name.
	plugin := fd.Services().ByName("Plugin")
	for _, e := range Events() {
		if plugin.Methods().ByName(protoreflect.Name(e.Name())) == nil {
			t.Errorf("event %s has no Plugin method", e.Name())
		}
	}
}

// TestExtensionFieldsInRange checks, independently of upstream, that every
// field documented as an nrikit extension is numbered in the reserved range.
func TestExtensionFieldsInRange(t *testing.T) {
	exts := map[protoreflect.FullName][]protoreflect.Name{
		"nri.pkg.api.v1alpha1.ConfigureRequest":        {"supported_events", "max_request_timeout", "synchronize_timeout"},
		"nri.pkg.api.v1alpha1.ConfigureResponse":       {"request_timeout", "scope"},
		"nri.pkg.api.v1alpha1.SynchronizeResponse":     {"opt_out"},
		"nri.pkg.api.v1alpha1.RunPodSandboxResponse":   {"opt_out"},
		"nri.pkg.api.v1alpha1.CreateContainerResponse": {"opt_out"},
	}
	for msg, fields := range exts {
		md := fd(t, msg)
		for _, f := range fields {
			field := md.Fields().ByName(f)
			if field == nil {
				t.Errorf("%s.%s missing", msg, f)
				continue
			}
			if n := field.Number(); n < ExtensionFieldMin || n > ExtensionFieldMax {
				t.Errorf("%s.%s = %d, outside %d-%d", msg, f, n, ExtensionFieldMin, ExtensionFieldMax)
			}
		}
	}
}

func fd(t *testing.T, name protoreflect.FullName) protoreflect.MessageDescriptor {
	t.Helper()
	md := File_nrikit_nri_proto.Messages().ByName(name.Name())
	if md == nil {
		t.Fatalf("message %s missing", name)
	}
	return md
}
