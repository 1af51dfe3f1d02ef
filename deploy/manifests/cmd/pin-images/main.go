// Command pin-images writes the names and digests of the plugin images
// `make images` built into the release overlays (deploy/README.md,
// Releases), so that they deploy those images by digest:
//
//	pin-images -images ../../.images -release ../kustomize/release [NAME...]
//
// (`make pin-images` from the repository root.) It reads IMAGES/NAME.tar,
// the OCI image layout of plugin NAME, and sets the newName and digest of
// the image in RELEASE/NAME/kustomization.yaml, for every release overlay
// or those named.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/nrikit/nrikit/deploy/manifests"
)

func main() {
	images := flag.String("images", "../../.images", "the directory of the image tarballs (make images)")
	release := flag.String("release", "../kustomize/release", "the directory of the release overlays")
	flag.Parse()
	pinned, err := manifests.PinImages(*release, *images, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pin-images:", err)
		os.Exit(1)
	}
	for _, name := range slices.Sorted(maps.Keys(pinned)) {
		fmt.Printf("%s\t%s\n", name, pinned[name].Ref())
	}
}
