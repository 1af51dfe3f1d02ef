// Command cri-container prints the CRI container configuration (the JSON
// that `crictl create` reads) the kubelet would send for the plugin
// container of a kustomize overlay's DaemonSet, so that a test can run
// the DaemonSet's container on a real runtime without a cluster:
//
//	cri-container ../kustomize/overlays/template /tmp/volumes > ctr.json
//
// ConfigMap volumes are written as files under the second argument's
// NAME directories, as the kubelet does, and mounted from there.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/nrikit/nrikit/deploy/manifests"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cri-container OVERLAY-DIR VOLUME-DIR")
		os.Exit(2)
	}
	r, err := manifests.Render(os.Args[1])
	if err == nil {
		var c *manifests.CRIContainer
		if c, err = r.ToCRI(os.Args[2]); err == nil {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(c)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cri-container:", err)
		os.Exit(1)
	}
}
