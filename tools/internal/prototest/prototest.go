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
	return Plugin(t, text, "").Files[0]
}

// Plugin compiles text as nrikit/nri.proto and returns the plugin that
// generates it with the parameter param (as buf's opt: "k=v,k=v"), for a
// test to write its files into and read them back (Plugin.Response).
func Plugin(t testing.TB, text, param string) *protogen.Plugin {
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
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{"nrikit/nri.proto"},
		ProtoFile:      []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(files[0])},
	}
	if param != "" {
		req.Parameter = &param
	}
	gen, err := protogen.Options{}.New(req)
	if err != nil {
		t.Fatalf("protogen: %v", err)
	}
	return gen
}
