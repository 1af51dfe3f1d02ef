// Command protoc-gen-nrifields is a protoc plugin (run by `make generate`
// through buf) that writes nrikit's field table from the proto: one row per
// value of enum Field (its path in ContainerAdjustment, human name,
// capability, owner kind and owner accessor) and one row per capability
// (an adjustment or update field, with its upstream capability value),
// both read from the "nri:" comment lines of proto/nrikit/nri.proto. It
// fails when a field of ContainerAdjustment or ContainerUpdate has no row,
// so a new field cannot be forgotten; the packages that repeat something
// per field derive it from the generated table.
package main

import (
	"flag"
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
)

func main() {
	var flags flag.FlagSet
	mergePkg := flags.String("merge", "", "import path of package merge, which gets its field tables")
	ocispecPkg := flags.String("ocispec", "", "import path of package ocispec, which gets its plan table")
	protogen.Options{ParamFunc: flags.Set}.Run(func(gen *protogen.Plugin) error {
		for _, f := range gen.Files {
			if !f.Generate {
				continue
			}
			t, err := readTable(f)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Desc.Path(), err)
			}
			if t == nil {
				continue
			}
			writeAPI(gen, f, t)
			if *mergePkg != "" {
				if err := writeMerge(gen, f, t, protogen.GoImportPath(*mergePkg)); err != nil {
					return fmt.Errorf("%s: %w", f.Desc.Path(), err)
				}
			}
			if *ocispecPkg != "" {
				writeOCISpec(gen, f, t, protogen.GoImportPath(*ocispecPkg))
			}
		}
		return nil
	})
}
