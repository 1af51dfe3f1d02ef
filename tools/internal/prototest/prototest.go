// Package prototest compiles the text of proto/nrikit/nri.proto (or an
// edited copy) into what protoc hands a plugin, comments included, for the
// tests of the generators in tools/.
package prototest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// NRIProto returns the text of the repository's proto/nrikit/nri.proto,
// found from the test's working directory (its package's) upwards: not
// from the test's source path, which -trimpath makes a module path.
func NRIProto(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "proto", "nrikit", "nri.proto"))
		if err == nil {
			return string(b)
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			t.Fatalf("prototest: proto/nrikit/nri.proto above the test's directory: %v", err)
		}
		dir = parent
	}
}

// File compiles text as nrikit/nri.proto and returns it as a plugin
// sees it.
func File(t testing.TB, text string) *protogen.File {
	t.Helper()
	c := protocompile.Compiler{
		Resolver: &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{
			"nrikit/nri.proto": text,
		})},
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(context.Background(), "nrikit/nri.proto")
	if err != nil {
		t.Fatalf("compiling the proto: %v", err)
	}
	gen, err := protogen.Options{}.New(&pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{"nrikit/nri.proto"},
		ProtoFile:      []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(files[0])},
	})
	if err != nil {
		t.Fatalf("protogen: %v", err)
	}
	return gen.Files[0]
}
