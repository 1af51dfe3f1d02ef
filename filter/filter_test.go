package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter/internal/scopetest"
)

func compile(t *testing.T, scope *api.PluginScope, opts ...Option) *Filter {
	t.Helper()
	f, err := Compile(scope, opts...)
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

func checkCases(t *testing.T, f *Filter, cases []matchCase) {
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

func TestMatchAll(t *testing.T) {
	for name, scope := range map[string]*api.PluginScope{
		"nil":        nil,
		"empty":      {},
		"blank":      {PodLabelSelector: "  ", Cel: " \n"},
		"emptyLists": {Namespaces: []string{}, Images: nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := compile(t, scope)
			if !f.MatchesAll() {
				t.Errorf("MatchesAll() = false")
			}
			if got := f.String(); got != "all" {
				t.Errorf("String() = %q, want all", got)
			}
			checkCases(t, f, []matchCase{
				{scopetest.GPUPod(), nil, true}, {scopetest.PlainPod(), nil, true},
				{scopetest.GPUPod(), scopetest.CUDAContainer(), true}, {scopetest.PlainPod(), scopetest.SidecarContainer(), true},
				{nil, nil, true}, {nil, &api.Container{}, true},
			})
		})
	}
	var nilFilter *Filter
	if !nilFilter.MatchPod(scopetest.GPUPod()) || !nilFilter.MatchContainer(nil, nil) || !nilFilter.MatchesAll() {
		t.Error("nil *Filter does not match everything")
	}
}

func TestCriteria(t *testing.T) {
	gpu, plain, cuda, side := scopetest.GPUPod(), scopetest.PlainPod(), scopetest.CUDAContainer(), scopetest.SidecarContainer()
	tests := []struct {
		name  string
		scope *api.PluginScope
		cases []matchCase
	}{
		{"namespaces", &api.PluginScope{Namespaces: []string{"ml-*", "research"}}, []matchCase{
			{gpu, nil, true}, {plain, nil, false}, {gpu, side, true}, {plain, cuda, false},
			{&api.PodSandbox{Namespace: "research"}, nil, true},
			{&api.PodSandbox{Namespace: "ml"}, nil, false},
		}},
		{"labelSelector", &api.PluginScope{PodLabelSelector: "gpu=true,tier in (a,b),!legacy"}, []matchCase{
			{gpu, nil, true}, {plain, nil, false}, {gpu, side, true}, {plain, cuda, false},
			{&api.PodSandbox{Labels: map[string]string{"gpu": "true", "tier": "a", "legacy": ""}}, nil, false},
		}},
		{"podAnnotationsExists", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{
			{Key: "example.com/accelerator"},
		}}, []matchCase{{gpu, nil, true}, {plain, nil, false}, {gpu, side, true}, {plain, cuda, false}}},
		{"podAnnotationsEquals", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{
			{Key: "example.com/owner", Op: api.AnnotationMatch_EQUALS, Value: "team-b"},
		}}, []matchCase{{gpu, nil, false}, {plain, nil, true}, {plain, cuda, true}}},
		{"podAnnotationsEqualsEmpty", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{
			{Key: "flag", Op: api.AnnotationMatch_EQUALS},
		}}, []matchCase{
			{&api.PodSandbox{Annotations: map[string]string{"flag": ""}}, nil, true},
			{&api.PodSandbox{Annotations: map[string]string{"flag": "x"}}, nil, false},
			{plain, nil, false},
		}},
		{"podAnnotationsOr", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{
			{Key: "example.com/owner", Op: api.AnnotationMatch_EQUALS, Value: "team-b"},
			{Key: "example.com/accelerator", Op: api.AnnotationMatch_REGEX, Value: "nvidia-.*"},
		}}, []matchCase{{gpu, nil, true}, {plain, nil, true}, {&api.PodSandbox{}, nil, false}}},
		{"runtimeHandlers", &api.PluginScope{RuntimeHandlers: []string{"nvidia", "kata"}}, []matchCase{
			{gpu, nil, true}, {plain, nil, false}, {gpu, side, true}, {plain, cuda, false},
			{&api.PodSandbox{RuntimeHandler: "nvidia-legacy"}, nil, false}, // exact, not a glob or prefix
		}},
		{"runtimeHandlersDefault", &api.PluginScope{RuntimeHandlers: []string{""}}, []matchCase{
			{gpu, nil, false}, {plain, nil, true},
		}},
		{"containerAnnotations", &api.PluginScope{ContainerAnnotations: []*api.AnnotationMatch{
			{Key: "example.com/profile", Op: api.AnnotationMatch_REGEX, Value: "gpu-.*"},
		}}, []matchCase{
			// Container-level criteria do not restrict pod events.
			{gpu, nil, true}, {plain, nil, true},
			{gpu, cuda, true}, {plain, cuda, true},
			{gpu, side, false}, // "my-gpu-large": the regex is anchored at the start
			{gpu, &api.Container{}, false},
		}},
		{"containerNames", &api.PluginScope{ContainerNames: []string{"trainer*", "worker"}}, []matchCase{
			{gpu, nil, true}, {plain, nil, true}, {gpu, cuda, true}, {gpu, side, false},
			{gpu, &api.Container{Name: "worker"}, true}, {gpu, &api.Container{Name: "worker-2"}, false},
		}},
		{"images", &api.PluginScope{Images: []string{"registry.io/gpu/*", "nvcr.io/*"}}, []matchCase{
			{gpu, nil, true}, {plain, nil, true}, {gpu, cuda, true}, {gpu, side, false},
			{gpu, &api.Container{Image: &api.Image{Name: "nvcr.io/nvidia/pytorch:24.01"}}, true},
			{gpu, &api.Container{Image: &api.Image{Name: "registry.io/gpu"}}, false},
			{gpu, &api.Container{}, false}, // no image
		}},
		{"allCriteria", &api.PluginScope{
			Namespaces:           []string{"ml-*"},
			PodLabelSelector:     "gpu=true",
			PodAnnotations:       []*api.AnnotationMatch{{Key: "example.com/accelerator"}},
			RuntimeHandlers:      []string{"nvidia"},
			ContainerAnnotations: []*api.AnnotationMatch{{Key: "example.com/profile"}},
			ContainerNames:       []string{"trainer-*"},
			Images:               []string{"registry.io/*"},
		}, []matchCase{
			{gpu, nil, true}, {gpu, cuda, true}, {plain, nil, false}, {plain, cuda, false}, {gpu, side, false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := compile(t, tc.scope)
			if f.MatchesAll() {
				t.Errorf("MatchesAll() = true for a scope with criteria")
			}
			checkCases(t, f, tc.cases)
		})
	}
}

// TestAndAcrossCriteria checks that each set criterion can on its own
// reject an event that all others accept.
func TestAndAcrossCriteria(t *testing.T) {
	base := func() *api.PluginScope {
		return &api.PluginScope{
			Namespaces:           []string{"ml-team"},
			PodLabelSelector:     "gpu",
			PodAnnotations:       []*api.AnnotationMatch{{Key: "example.com/owner"}},
			RuntimeHandlers:      []string{"nvidia"},
			ContainerAnnotations: []*api.AnnotationMatch{{Key: "example.com/profile"}},
			ContainerNames:       []string{"trainer-main"},
			Images:               []string{"registry.io/gpu/cuda:12"},
		}
	}
	if !compile(t, base()).MatchContainer(scopetest.GPUPod(), scopetest.CUDAContainer()) {
		t.Fatal("base scope does not match")
	}
	breakers := map[string]func(*api.PodSandbox, *api.Container){
		"namespace":            func(p *api.PodSandbox, _ *api.Container) { p.Namespace = "other" },
		"labels":               func(p *api.PodSandbox, _ *api.Container) { delete(p.Labels, "gpu") },
		"podAnnotations":       func(p *api.PodSandbox, _ *api.Container) { delete(p.Annotations, "example.com/owner") },
		"runtimeHandler":       func(p *api.PodSandbox, _ *api.Container) { p.RuntimeHandler = "runc" },
		"containerAnnotations": func(_ *api.PodSandbox, c *api.Container) { c.Annotations = nil },
		"containerName":        func(_ *api.PodSandbox, c *api.Container) { c.Name = "other" },
		"image":                func(_ *api.PodSandbox, c *api.Container) { c.Image.Name = "registry.io/gpu/cuda:11" },
	}
	f := compile(t, base())
	for name, brk := range breakers {
		pod, ctr := scopetest.GPUPod(), scopetest.CUDAContainer()
		brk(pod, ctr)
		if f.MatchContainer(pod, ctr) {
			t.Errorf("breaking %s: container event still matches", name)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		scope *api.PluginScope
		msg   []string
	}{
		{"namespaceGlob", &api.PluginScope{Namespaces: []string{"ok", "kube-[a"}}, []string{"namespaces:", `"kube-[a"`}},
		{"emptyGlob", &api.PluginScope{ContainerNames: []string{""}}, []string{"container_names:", "empty pattern"}},
		{"imageGlob", &api.PluginScope{Images: []string{`x\`}}, []string{"images:", "trailing backslash"}},
		{"selector", &api.PluginScope{PodLabelSelector: "gpu=true,tier in (a"}, []string{"pod_label_selector:", "column 20", "unterminated"}},
		{"annotationKey", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Value: "x", Op: api.AnnotationMatch_EQUALS}}}, []string{"pod_annotations:", "entry 0", "empty annotation key"}},
		{"existsWithValue", &api.PluginScope{ContainerAnnotations: []*api.AnnotationMatch{{Key: "k", Value: "v"}}}, []string{"container_annotations:", "EXISTS takes no value"}},
		{"badRegex", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Key: "k"}, {Key: "k", Op: api.AnnotationMatch_REGEX, Value: "a("}}}, []string{"entry 1", "invalid regular expression"}},
		{"unknownOp", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Key: "k", Op: 7}}}, []string{"unknown op 7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.scope)
			if err == nil {
				t.Fatalf("Compile succeeded: %s", f)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not contain %q", err, m)
				}
			}
		})
	}
}

func TestRegexAnchoring(t *testing.T) {
	tests := []struct {
		re, value string
		want      bool
	}{
		{"gpu", "gpu", true},
		{"gpu", "gpus", false},
		{"gpu", "a-gpu", false},
		{"gpu.*", "gpu-a100", true},
		{".*gpu.*", "a-gpu-b", true},
		{"a|b", "a", true},
		{"a|b", "ab", false}, // the alternation is grouped before anchoring
		{"(?m)a$", "a\nb", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tc := range tests {
		f := compile(t, &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Key: "k", Op: api.AnnotationMatch_REGEX, Value: tc.re}}})
		if got := f.MatchPod(&api.PodSandbox{Annotations: map[string]string{"k": tc.value}}); got != tc.want {
			t.Errorf("regex %q on %q: match = %v, want %v", tc.re, tc.value, got, tc.want)
		}
	}
}

func TestAnd(t *testing.T) {
	ml := compile(t, &api.PluginScope{Namespaces: []string{"ml-*"}})
	gpuLabel := compile(t, &api.PluginScope{PodLabelSelector: "gpu=true"})
	trainer := compile(t, &api.PluginScope{ContainerNames: []string{"trainer*"}})
	notML := compile(t, &api.PluginScope{Namespaces: []string{"default"}})

	f := And(ml, gpuLabel, trainer, nil, compile(t, nil))
	checkCases(t, f, []matchCase{
		{scopetest.GPUPod(), nil, true}, {scopetest.GPUPod(), scopetest.CUDAContainer(), true}, {scopetest.GPUPod(), scopetest.SidecarContainer(), false},
		{scopetest.PlainPod(), nil, false}, {scopetest.PlainPod(), scopetest.CUDAContainer(), false},
		{&api.PodSandbox{Namespace: "ml-x"}, nil, false}, // label missing
	})
	if got, want := f.String(), `namespaces=["ml-*"] AND pod_label_selector="gpu=true" AND container_names=["trainer*"]`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	// Two lists of the same criterion are ANDed, not merged into one OR.
	both := And(ml, notML)
	if both.MatchPod(scopetest.GPUPod()) || both.MatchPod(scopetest.PlainPod()) {
		t.Errorf("%s matches a pod in only one of the namespaces", both)
	}
	// Inputs are not modified.
	if ml.String() != `namespaces=["ml-*"]` {
		t.Errorf("And modified its input: %s", ml)
	}
	for _, empty := range []*Filter{And(), And(nil), And(compile(t, nil), nil)} {
		if !empty.MatchesAll() || !empty.MatchContainer(scopetest.PlainPod(), scopetest.SidecarContainer()) {
			t.Errorf("And of no criteria does not match everything: %s", empty)
		}
	}
}

func TestString(t *testing.T) {
	f := compile(t, &api.PluginScope{
		Namespaces:       []string{"kube-*", "default"},
		PodLabelSelector: " gpu=true ",
		PodAnnotations: []*api.AnnotationMatch{
			{Key: "a"},
			{Key: "b", Op: api.AnnotationMatch_EQUALS, Value: "x"},
			{Key: "c", Op: api.AnnotationMatch_REGEX, Value: "y.*"},
		},
		RuntimeHandlers:      []string{"runc", ""},
		ContainerAnnotations: []*api.AnnotationMatch{{Key: "d"}},
		ContainerNames:       []string{"main"},
		Images:               []string{"registry.io/*"},
	})
	want := `namespaces=["kube-*","default"] AND pod_label_selector="gpu=true" AND ` +
		`pod_annotations=["a","b"="x","c"=~"y.*"] AND runtime_handlers=["runc",""] AND ` +
		`container_annotations=["d"] AND container_names=["main"] AND images=["registry.io/*"]`
	if got := f.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}

// TestCompileCopiesScope checks that the filter does not change when the
// scope it was compiled from does.
func TestCompileCopiesScope(t *testing.T) {
	scope := &api.PluginScope{RuntimeHandlers: []string{"nvidia"}, Namespaces: []string{"ml-*"}}
	f := compile(t, scope)
	scope.RuntimeHandlers[0] = "runc"
	scope.Namespaces[0] = "default"
	if !f.MatchPod(scopetest.GPUPod()) || f.MatchPod(scopetest.PlainPod()) {
		t.Errorf("filter %s changed with its scope", f)
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, opt := range map[string]Option{
		"logger":    WithLogger(nil),
		"handler":   WithEvalErrorHandler(nil),
		"costLimit": WithCELCostLimit(0),
		"cel":       WithCEL(nil),
	} {
		if _, err := Compile(nil, opt); err == nil {
			t.Errorf("%s: Compile accepted an invalid option", name)
		}
	}
}

// TestCELSupport checks that a CEL expression needs WithCEL, and that the
// compiler given to it receives the options and decides the matches.
func TestCELSupport(t *testing.T) {
	scope := &api.PluginScope{Namespaces: []string{"ml-*"}, Cel: `pod.name == "trainer"`}
	_, err := Compile(scope)
	if !errors.Is(err, ErrNoCEL) || !strings.Contains(err.Error(), "filter: cel:") || !strings.Contains(err.Error(), "WithCEL") {
		t.Errorf("Compile without CEL support: %v, want ErrNoCEL naming WithCEL", err)
	}
	var got CELConfig
	var gotExpr string
	handler := func(*EvalError) {}
	fake := func(expr string, cfg CELConfig) (Matcher, error) {
		gotExpr, got = expr, cfg
		// A stand-in for CEL: the pod's name is "trainer".
		return compile(t, &api.PluginScope{PodLabelSelector: "gpu=true"}), nil
	}
	f := compile(t, scope, WithCEL(fake), WithCELCostLimit(42), WithEvalErrorHandler(handler))
	if gotExpr != scope.Cel || got.CostLimit != 42 || got.OnEvalError == nil || got.Logger != nil {
		t.Errorf("compiler called with %q, %+v", gotExpr, got)
	}
	checkCases(t, f, []matchCase{{scopetest.GPUPod(), nil, true}, {scopetest.GPUPod(), scopetest.CUDAContainer(), true}, {&api.PodSandbox{Namespace: "ml-x"}, nil, false}})
	if want := `namespaces=["ml-*"] AND cel="pod.name == \"trainer\""`; f.String() != want {
		t.Errorf("String() = %s, want %s", f, want)
	}
	failing := func(string, CELConfig) (Matcher, error) { return nil, errors.New("bad expression") }
	if _, err := Compile(scope, WithCEL(failing)); err == nil || !strings.Contains(err.Error(), "filter: cel: bad expression") {
		t.Errorf("failing compiler: %v", err)
	}
	nothing := func(string, CELConfig) (Matcher, error) { return nil, nil }
	if _, err := Compile(scope, WithCEL(nothing)); err == nil {
		t.Error("a compiler returning no matcher was accepted")
	}
}
