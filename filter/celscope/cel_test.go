package celscope

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/internal/scopetest"
)

func TestCELSemantics(t *testing.T) {
	gpu, plain, cuda, side := scopetest.GPUPod(), scopetest.PlainPod(), scopetest.CUDAContainer(), scopetest.SidecarContainer()
	tests := []struct {
		expr  string
		cases []matchCase
	}{
		// The typical expression: pod events of accel pods (whatever their
		// containers) and container events of their non-sidecars.
		{`pod.labels["gpu"] == "true" && container.name != "sidecar"`, []matchCase{
			{gpu, nil, true}, {gpu, cuda, true}, {gpu, side, false},
		}},
		{`"gpu" in pod.labels && pod.labels["gpu"] == "true" && container.name != "sidecar"`, []matchCase{
			{plain, nil, false}, {plain, cuda, false},
		}},
		// Container-only expressions do not restrict pod events.
		{`container.image.startsWith("registry.io/gpu/")`, []matchCase{
			{gpu, nil, true}, {plain, nil, true}, {gpu, cuda, true}, {plain, side, false},
		}},
		{`has(container.name)`, []matchCase{{gpu, nil, true}, {gpu, cuda, true}, {gpu, &api.Container{}, false}}},
		{`!has(container.name)`, []matchCase{{gpu, nil, true}, {gpu, cuda, false}, {gpu, &api.Container{}, true}}},
		// But a pod-level term that is false rejects the pod event, on either side of ||.
		{`pod.namespace == "ml-team" || container.name == "sidecar"`, []matchCase{
			{gpu, nil, true}, {plain, nil, true}, {plain, side, true}, {plain, cuda, false},
		}},
		{`pod.namespace == "ml-team" && container.name == "sidecar"`, []matchCase{
			{gpu, nil, true}, {plain, nil, false}, {gpu, side, true}, {gpu, cuda, false},
		}},
		// Pod fields.
		{`pod.id == "pod-gpu" && pod.name == "trainer" && pod.namespace == "ml-team" && pod.uid == "uid-1"`, []matchCase{
			{gpu, nil, true}, {plain, nil, false}, {gpu, side, true},
		}},
		{`pod.runtime_handler == "nvidia"`, []matchCase{{gpu, nil, true}, {plain, nil, false}}},
		{`has(pod.runtime_handler)`, []matchCase{{gpu, nil, true}, {plain, nil, false}}},
		{`pod.annotations["example.com/owner"].endsWith("-a")`, []matchCase{{gpu, nil, true}, {plain, nil, false}}},
		{`pod.labels.exists(k, k == "legacy")`, []matchCase{{gpu, nil, false}, {plain, nil, true}}},
		{`pod.labels[?"gpu"].orValue("false") == "true"`, []matchCase{{gpu, nil, true}, {plain, nil, false}}},
		{`size(pod.labels) == 2`, []matchCase{{gpu, nil, true}, {&api.PodSandbox{}, nil, false}}},
		{`type(pod) == nrikit.Pod && type(container) == nrikit.Container`, []matchCase{{gpu, cuda, true}}},
		// Container fields.
		{`container.id == "ctr-cuda" && container.labels["role"] == "main"`, []matchCase{{gpu, cuda, true}, {gpu, side, false}}},
		{`container.annotations["example.com/profile"].matches("^gpu-")`, []matchCase{{gpu, cuda, true}, {gpu, side, false}}},
		{`container.args == ["python", "train.py"]`, []matchCase{{gpu, cuda, true}, {gpu, side, false}}},
		{`"train.py" in container.args`, []matchCase{{gpu, cuda, true}, {gpu, side, false}}},
		{`container.env["CUDA_VISIBLE_DEVICES"] == "0"`, []matchCase{{gpu, cuda, true}}},
		{`"CUDA_VISIBLE_DEVICES" in container.env`, []matchCase{{gpu, cuda, true}, {gpu, side, false}}},
		{`container.env == {"A": "2", "B": ""}`, []matchCase{
			{gpu, &api.Container{Env: []string{"A=1", "B", "A=2"}}, true}, // last value wins; no '=' is empty
		}},
		{`has(container.env) && has(container.args) && has(container.image)`, []matchCase{{gpu, cuda, true}, {gpu, side, false}}},
		// Object equality is identity; dynamic access works like typed access.
		{`pod == pod && container == container && dyn(pod) != dyn(container)`, []matchCase{{gpu, cuda, true}}},
		{`dyn(pod).name == "trainer" && dyn(container).args.size() == 2`, []matchCase{{gpu, cuda, true}, {plain, cuda, false}}},
		{`has(dyn(pod).runtime_handler) && has(dyn(container).env)`, []matchCase{{gpu, cuda, true}, {plain, cuda, false}, {gpu, side, false}}},
		// Nil objects read as empty ones.
		{`pod.name == "" && container.image == "" && size(container.args) == 0`, []matchCase{{nil, &api.Container{}, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			var errs []*filter.EvalError
			f := compile(t, &api.PluginScope{Cel: tc.expr}, filter.WithEvalErrorHandler(func(e *filter.EvalError) { errs = append(errs, e) }))
			checkCases(t, f, tc.cases)
			for _, e := range errs {
				t.Errorf("unexpected evaluation error: %v", e)
			}
		})
	}
}

func TestCELCompileErrors(t *testing.T) {
	tests := []struct {
		expr string
		msg  []string
	}{
		{`pod.lables["x"] == "y"`, []string{"filter: cel:", "undefined field 'lables'", "1:4"}},
		{`pods.name == "x"`, []string{"undeclared reference to 'pods'"}},
		{`pod.name == `, []string{"Syntax error", "1:13"}},
		{`container.image == 1`, []string{"found no matching overload for '_==_'"}},
		{`nrikit.Pod{name: "x"}.name == "x"`, []string{"constructs a nrikit.Pod value"}},
		{`[nrikit.Container{}].size() == 1`, []string{"constructs a nrikit.Container value"}},
		// Non-bool results.
		{`pod.name`, []string{"has type string, must be bool"}},
		{`size(pod.labels)`, []string{"has type int, must be bool"}},
		{`pod.labels`, []string{"must be bool"}},
		{`pod.labels[?"x"]`, []string{"must be bool"}},
		{`dyn(true)`, []string{"has type dyn, must be bool"}},
	}
	for _, tc := range tests {
		f, err := compileErr(&api.PluginScope{Cel: tc.expr})
		if err == nil {
			t.Errorf("Compile(%q) succeeded: %s", tc.expr, f)
			continue
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("Compile(%q) error %q does not contain %q", tc.expr, err, m)
			}
		}
	}
}

func TestCELCostLimitAtCompile(t *testing.T) {
	// Quadratic in the number of labels: within the default limit.
	quad := `pod.labels.all(a, pod.labels.all(b, a == b || a != b))`
	compile(t, &api.PluginScope{Cel: quad})
	// Cubic: over it.
	cubic := `pod.labels.all(a, pod.labels.all(b, pod.labels.all(c, a != b || b != c)))`
	_, err := compileErr(&api.PluginScope{Cel: cubic})
	if err == nil || !strings.Contains(err.Error(), "estimated worst-case cost") || !strings.Contains(err.Error(), fmt.Sprint(filter.DefaultCELCostLimit)) {
		t.Errorf("Compile(cubic) error = %v, want the estimated cost over the default limit", err)
	}
	// A lower limit rejects the quadratic one too.
	_, err = compileErr(&api.PluginScope{Cel: quad}, filter.WithCELCostLimit(10_000))
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit 10000") {
		t.Errorf("Compile(quad, limit 10000) error = %v, want the cost limit exceeded", err)
	}
}

func TestCELCostLimitAtRuntime(t *testing.T) {
	// The compile-time estimate assumes at most 64 labels; the runtime limit
	// also holds for a pod with far more.
	expr := `pod.labels.exists(k, k.startsWith("zz"))`
	var (
		mu   sync.Mutex
		errs []*filter.EvalError
	)
	var logBuf bytes.Buffer
	f := compile(t, &api.PluginScope{Cel: expr}, filter.WithCELCostLimit(2000),
		filter.WithEvalErrorHandler(func(e *filter.EvalError) { mu.Lock(); errs = append(errs, e); mu.Unlock() }),
		filter.WithLogger(slog.New(slog.NewTextHandler(&logBuf, nil))))

	few := &api.PodSandbox{Id: "few", Labels: map[string]string{"zz-top": "1"}}
	if !f.MatchContainer(few, scopetest.CUDAContainer()) {
		t.Errorf("small pod does not match")
	}
	many := &api.PodSandbox{Id: "many", Labels: map[string]string{}}
	for i := range 5000 {
		many.Labels[fmt.Sprintf("label-%d", i)] = "v"
	}
	if f.MatchContainer(many, scopetest.CUDAContainer()) {
		t.Errorf("evaluation over the cost limit matched")
	}
	if f.MatchPod(many) {
		t.Errorf("pod evaluation over the cost limit matched")
	}
	if len(errs) != 2 {
		t.Fatalf("got %d evaluation errors, want 2: %v", len(errs), errs)
	}
	for _, e := range errs {
		if !isCostLimitExceeded(e) || e.PodID != "many" || e.Expression != expr {
			t.Errorf("evaluation error %#v is not the cost limit of pod many", e)
		}
	}
	if errs[0].ContainerID != "ctr-cuda" || errs[1].ContainerID != "" {
		t.Errorf("container IDs %q, %q; want ctr-cuda and none", errs[0].ContainerID, errs[1].ContainerID)
	}
	if out := logBuf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "costLimitExceeded=true") || !strings.Contains(out, "pod=many") {
		t.Errorf("log does not report the failures:\n%s", out)
	}
}

func TestCELEvalErrorIsNoMatch(t *testing.T) {
	var errs []*filter.EvalError
	f := compile(t, &api.PluginScope{Cel: `pod.labels["missing"] == "x" || container.name == "main"`},
		filter.WithEvalErrorHandler(func(e *filter.EvalError) { errs = append(errs, e) }))
	if f.MatchContainer(scopetest.GPUPod(), scopetest.SidecarContainer()) {
		t.Error("failed evaluation matched")
	}
	// An error absorbed by || is no error.
	if !f.MatchContainer(scopetest.GPUPod(), &api.Container{Id: "c", Name: "main"}) {
		t.Error("true || error did not match")
	}
	// On a pod event the unknown container may make it true: a match.
	if !f.MatchPod(scopetest.GPUPod()) {
		t.Error("error || unknown did not match a pod event")
	}
	podOnly := compile(t, &api.PluginScope{Cel: `pod.labels["missing"] == "x"`},
		filter.WithEvalErrorHandler(func(e *filter.EvalError) { errs = append(errs, e) }))
	if podOnly.MatchPod(scopetest.GPUPod()) {
		t.Error("failed pod evaluation matched")
	}
	if len(errs) != 2 {
		t.Fatalf("got %d evaluation errors, want 2: %v", len(errs), errs)
	}
	if !strings.Contains(errs[0].Error(), "no such key: missing") || errs[0].ContainerID != "ctr-side" ||
		!strings.Contains(errs[0].Error(), "container ctr-side of pod pod-gpu") {
		t.Errorf("first error %q does not report the missing key for ctr-side", errs[0])
	}
	if errs[1].ContainerID != "" || !strings.Contains(errs[1].Error(), "for pod pod-gpu:") {
		t.Errorf("second error %q is not about the pod event", errs[1])
	}
	if errors.Unwrap(errs[0]) == nil {
		t.Error("filter.EvalError does not unwrap to CEL's error")
	}
	// Dynamic access to a field that does not exist.
	errs = nil
	dynamic := compile(t, &api.PluginScope{Cel: `dyn(pod).nope == "x"`},
		filter.WithEvalErrorHandler(func(e *filter.EvalError) { errs = append(errs, e) }))
	if dynamic.MatchContainer(scopetest.GPUPod(), scopetest.CUDAContainer()) || len(errs) != 1 || !strings.Contains(errs[0].Error(), `no such field "nope"`) {
		t.Errorf("dyn(pod).nope: errors %v, want one about the missing field", errs)
	}
	// Without a handler or logger, a failed evaluation is still no match.
	quiet := compile(t, &api.PluginScope{Cel: `pod.labels["missing"] == "x"`})
	if quiet.MatchPod(scopetest.GPUPod()) {
		t.Error("failed evaluation matched")
	}
}

func TestCELConcurrent(t *testing.T) {
	f := compile(t, &api.PluginScope{Cel: `pod.labels["gpu"] == "true" && container.name != "sidecar"`})
	gpu, plain, cuda, side := scopetest.GPUPod(), scopetest.PlainPod(), scopetest.CUDAContainer(), scopetest.SidecarContainer()
	var wg sync.WaitGroup
	failures := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if !f.MatchContainer(gpu, cuda) || f.MatchContainer(gpu, side) ||
					!f.MatchPod(gpu) || f.MatchContainer(plain, cuda) {
					failures <- fmt.Sprintf("goroutine %d iteration %d: wrong result", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for msg := range failures {
		t.Error(msg)
	}
}
