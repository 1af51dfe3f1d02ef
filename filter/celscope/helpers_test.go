package celscope

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/internal/scopetest"
)

// compileErr compiles scope with CEL support.
func compileErr(scope *api.PluginScope, opts ...filter.Option) (*filter.Filter, error) {
	return filter.Compile(scope, append(opts, filter.WithCEL(Compile))...)
}

func compile(t testing.TB, scope *api.PluginScope, opts ...filter.Option) *filter.Filter {
	t.Helper()
	f, err := compileErr(scope, opts...)
	if err != nil {
		t.Fatalf("Compile(%v): %v", scope, err)
	}
	return f
}

// matchCase is one expectation of a filter: on the pod event of a pod and
// on a container event.
type matchCase struct {
	pod  *api.PodSandbox
	ctr  *api.Container // nil: a pod event
	want bool
}

func checkCases(t *testing.T, f *filter.Filter, cases []matchCase) {
	t.Helper()
	for i, c := range cases {
		var got bool
		if c.ctr == nil {
			got = f.MatchPod(c.pod)
		} else {
			got = f.MatchContainer(c.pod, c.ctr)
		}
		if got != c.want {
			t.Errorf("case %d (pod %s, container %s): match = %v, want %v; filter %s",
				i, c.pod.GetId(), c.ctr.GetId(), got, c.want, f)
		}
	}
}

// TestWithOtherCriteria checks a CEL expression ANDed with every other
// criterion, and how the filter renders it.
func TestWithOtherCriteria(t *testing.T) {
	gpu, plain, cuda, side := scopetest.GPUPod(), scopetest.PlainPod(), scopetest.CUDAContainer(), scopetest.SidecarContainer()
	f := compile(t, &api.PluginScope{
		Namespaces:           []string{"ml-*"},
		PodLabelSelector:     "gpu=true",
		PodAnnotations:       []*api.AnnotationMatch{{Key: "example.com/accelerator"}},
		RuntimeHandlers:      []string{"nvidia"},
		ContainerAnnotations: []*api.AnnotationMatch{{Key: "example.com/profile"}},
		ContainerNames:       []string{"trainer-*"},
		Images:               []string{"registry.io/*"},
		Cel:                  `container.args.size() == 2`,
	})
	checkCases(t, f, []matchCase{
		{gpu, nil, true}, {gpu, cuda, true}, {plain, nil, false}, {plain, cuda, false}, {gpu, side, false},
	})
	noArgs := scopetest.CUDAContainer()
	noArgs.Args = nil
	if f.MatchContainer(gpu, noArgs) {
		t.Error("the CEL expression alone does not reject a container")
	}
	want := `namespaces=["ml-*"] AND pod_label_selector="gpu=true" AND pod_annotations=["example.com/accelerator"] AND ` +
		`runtime_handlers=["nvidia"] AND container_annotations=["example.com/profile"] AND container_names=["trainer-*"] AND ` +
		`images=["registry.io/*"] AND cel="container.args.size() == 2"`
	if got := f.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}
