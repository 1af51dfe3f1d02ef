package celscope_test

import (
	"encoding/json"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
)

// An administrator's scope, configured as JSON, combined with the scope a
// plugin asked for in its ConfigureResponse, which has a CEL expression:
// CEL support is passed in with filter.WithCEL.
func Example() {
	config := []byte(`{
	  "namespaces": ["ml-*", "research"],
	  "pod_label_selector": "gpu=true,tier in (a,b),!legacy",
	  "container_annotations": [{"key": "example.com/profile", "op": 2, "value": "gpu-.*"}],
	  "images": ["registry.io/gpu/*"]
	}`)
	var adminScope api.PluginScope
	if err := json.Unmarshal(config, &adminScope); err != nil {
		fmt.Println("bad configuration:", err)
		return
	}
	admin, err := filter.Compile(&adminScope)
	if err != nil {
		fmt.Println("bad scope:", err)
		return
	}
	plugin, err := filter.Compile(&api.PluginScope{Cel: `container.name != "sidecar"`}, filter.WithCEL(celscope.Compile))
	if err != nil {
		fmt.Println("bad scope:", err)
		return
	}
	f := filter.And(plugin, admin)
	fmt.Println(f)

	pod := &api.PodSandbox{Namespace: "ml-vision", Labels: map[string]string{"gpu": "true", "tier": "a"}}
	ctr := &api.Container{
		Name:        "trainer",
		Image:       &api.Image{Name: "registry.io/gpu/cuda:12"},
		Annotations: map[string]string{"example.com/profile": "gpu-large"},
	}
	sidecar := &api.Container{Name: "sidecar", Image: ctr.Image, Annotations: ctr.Annotations}
	fmt.Println(f.MatchPod(pod), f.MatchContainer(pod, ctr), f.MatchContainer(pod, sidecar))
	// Output:
	// cel="container.name != \"sidecar\"" AND namespaces=["ml-*","research"] AND pod_label_selector="gpu=true,tier in (a,b),!legacy" AND container_annotations=["example.com/profile"=~"gpu-.*"] AND images=["registry.io/gpu/*"]
	// true true false
}
