package adaptation

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/policy"
)

type observedKey struct{}

// TestObserver checks that the observer sees every request with its
// answer or error, on the runtime call's context.
func TestObserver(t *testing.T) {
	var mu sync.Mutex
	var calls []Call
	var tags []any
	svc := &inproc{}
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("05", "inproc", svc), WithDisabledExternalConnections(),
		WithObserver(func(ctx context.Context, c Call) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, c)
			tags = append(tags, ctx.Value(observedKey{}))
		}))
	rt.start(t)
	ctx := context.WithValue(ctxT(t), observedKey{}, "create")
	req := &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}
	if _, err := rt.a.CreateContainer(ctx, req); err != nil {
		t.Fatal(err)
	}
	ctx = context.WithValue(ctxT(t), observedKey{}, "remove")
	must(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}))
	// RunPodSandbox: the plugin is not subscribed, nothing is observed.
	must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: testPod(1)}))

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("observed %d calls, want 2: %+v", len(calls), calls)
	}
	create, remove := calls[0], calls[1]
	if create.Plugin != "05-inproc" || create.Event != api.Event_CREATE_CONTAINER || create.Err != nil || tags[0] != "create" {
		t.Errorf("create call %+v (context tag %v)", create, tags[0])
	}
	if r, ok := create.Response.(*api.CreateContainerResponse); !ok || r.GetAdjust().GetEnv()[0].GetKey() != "INPROC" {
		t.Errorf("create response %v", create.Response)
	}
	if q, ok := create.Request.(*api.CreateContainerRequest); !ok || q.GetContainer().GetId() != "ctr0" {
		t.Errorf("create request %v", create.Request)
	}
	var perr *PluginError
	if remove.Event != api.Event_REMOVE_CONTAINER || remove.Response != nil || !errors.As(remove.Err, &perr) ||
		perr.Plugin != "05-inproc" || tags[1] != "remove" {
		t.Errorf("remove call %+v (context tag %v)", remove, tags[1])
	}
	if create.Duration <= 0 || remove.Duration <= 0 {
		t.Errorf("durations %v, %v", create.Duration, remove.Duration)
	}
}

func TestObserverOption(t *testing.T) {
	if _, err := New("rt", "1", runtimetest.NewStore().List, runtimetest.NewStore().Update, WithObserver(nil)); err == nil {
		t.Error("nil observer accepted")
	}
}

// TestRefusalObserver checks that an answer the policy refuses is told
// to the refusal observer, with the violations and on the runtime call's
// context, after the observer saw it as answered; an allowed answer is
// not.
func TestRefusalObserver(t *testing.T) {
	pol, err := policy.Parse("policy.yaml", []byte("grants:\n  - plugins: [inproc]\n    adjust: {env: [OTHER]}\ndefault: {adjust: {env: [INPROC]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refusals []Refusal
	var tags []any
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("05", "inproc", &inproc{}), WithBuiltinPlugin("06", "allowed", &inproc{}),
		WithDisabledExternalConnections(), WithPolicy(pol),
		WithRefusalObserver(func(ctx context.Context, r Refusal) {
			mu.Lock()
			defer mu.Unlock()
			refusals = append(refusals, r)
			tags = append(tags, ctx.Value(observedKey{}))
		}))
	rt.start(t)
	// 05-inproc's answer is refused, 06-allowed's (the same) is not.
	ctx := context.WithValue(ctxT(t), observedKey{}, "create")
	if _, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refusals) != 1 {
		t.Fatalf("told %d refusals, want 1: %+v", len(refusals), refusals)
	}
	r := refusals[0]
	var denied *policy.DeniedError
	if r.Plugin != "05-inproc" || r.Event != api.Event_CREATE_CONTAINER || r.Err == nil || r.Err.Kind != FailureDenied ||
		!errors.As(r.Err, &denied) || len(denied.Violations) != 1 || tags[0] != "create" {
		t.Errorf("refusal %+v (context tag %v)", r, tags[0])
	}
	if _, err := New("rt", "1", runtimetest.NewStore().List, runtimetest.NewStore().Update, WithRefusalObserver(nil)); err == nil {
		t.Error("nil refusal observer accepted")
	}
}
