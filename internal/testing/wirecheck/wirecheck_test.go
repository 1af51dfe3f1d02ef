package wirecheck

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

var rules = Rules{ExtensionMin: 1000, ExtensionMax: 1999}

func upstreamProto(t *testing.T) *descriptorpb.FileDescriptorProto {
	t.Helper()
	raw, err := os.ReadFile("../../../api/testdata/upstream-v0.12.5.binpb")
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	return set.File[0]
}

func message(fdp *descriptorpb.FileDescriptorProto, name string) *descriptorpb.DescriptorProto {
	for _, m := range fdp.MessageType {
		if m.GetName() == name {
			return m
		}
	}
	return nil
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*descriptorpb.FileDescriptorProto)
		want   string // substring of the one expected difference; "" for none
	}{
		{"identical", func(*descriptorpb.FileDescriptorProto) {}, ""},
		{"renumbered field", func(f *descriptorpb.FileDescriptorProto) {
			message(f, "Container").Field[2].Number = proto.Int32(99)
		}, "field nri.pkg.api.v1alpha1.Container.name = 3: missing"},
		{"changed type", func(f *descriptorpb.FileDescriptorProto) {
			message(f, "ConfigureRequest").Field[3].Type = descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()
		}, "registration_timeout = 4: type upstream int64, ours int32"},
		{"renamed field", func(f *descriptorpb.FileDescriptorProto) {
			message(f, "KeyValue").Field[0].Name = proto.String("name")
			message(f, "KeyValue").Field[0].JsonName = proto.String("name")
		}, "KeyValue.key = 1: name upstream key, ours name"},
		{"added field below extension range", func(f *descriptorpb.FileDescriptorProto) {
			m := message(f, "Empty")
			m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String("x"), JsonName: proto.String("x"), Number: proto.Int32(7),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum()})
		}, "Empty.x = 7: added outside the extension range"},
		{"added extension field", func(f *descriptorpb.FileDescriptorProto) {
			m := message(f, "Empty")
			m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String("x"), JsonName: proto.String("x"), Number: proto.Int32(1000),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum()})
		}, ""},
		{"removed method", func(f *descriptorpb.FileDescriptorProto) {
			f.Service[1].Method = f.Service[1].Method[1:]
		}, "method nri.pkg.api.v1alpha1.Plugin.Configure: missing"},
		{"enum value renumbered", func(f *descriptorpb.FileDescriptorProto) {
			for _, e := range f.EnumType {
				if e.GetName() == "Event" {
					e.Value[4].Number = proto.Int32(40)
				}
			}
		}, "enum nri.pkg.api.v1alpha1.Event value CREATE_CONTAINER: upstream 4, ours 40"},
	}
	upstream, err := protodesc.NewFile(upstreamProto(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutated := upstreamProto(t)
			tt.mutate(mutated)
			ours, err := protodesc.NewFile(mutated, nil)
			if err != nil {
				t.Fatalf("building mutated descriptor: %v", err)
			}
			diffs := Compare(upstream, ours, rules)
			if tt.want == "" {
				if len(diffs) != 0 {
					t.Fatalf("want no differences, got:\n%s", strings.Join(diffs, "\n"))
				}
				return
			}
			if len(diffs) == 0 || !strings.Contains(strings.Join(diffs, "\n"), tt.want) {
				t.Fatalf("want a difference containing %q, got:\n%s", tt.want, strings.Join(diffs, "\n"))
			}
		})
	}
}
