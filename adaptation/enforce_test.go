package adaptation

import (
	"errors"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/policy"
)

// TestCheckGrantFindsWithoutActing checks the grant check on its own, with
// no plugin and no Adaptation: it returns the violations of an answer, the
// grant's action and a target whose where it could not check, and builds
// the refusal from them; acting on them is enforceGrant's.
func TestCheckGrantFindsWithoutActing(t *testing.T) {
	pol := parsePolicy(t, testPolicy)
	pod := &api.PodSandbox{Id: "pod", Name: "p", Namespace: "ns"}
	ctr := &api.Container{Id: "ctr", PodSandboxId: "pod", Name: "c"}
	s := subject{pod: pod, ctr: ctr}
	adjust := func(env string) *api.CreateContainerResponse {
		return &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: env, Value: "1"}}}}
	}

	if f := checkGrant(nil, answerTargets{s: s}, adjust("BAD")); f.grant != nil || f.violations != nil || f.err("10-env", s) != nil {
		t.Errorf("no policy: found %+v, want nothing", f)
	}

	gs := &grantState{grant: pol.GrantFor("10", "env")}
	if f := checkGrant(gs, answerTargets{s: s}, adjust("OK_X")); len(f.violations) != 0 || f.err("10-env", s) != nil {
		t.Errorf("allowed change: found %+v, want no violation", f)
	}
	f := checkGrant(gs, answerTargets{s: s}, adjust("BAD"))
	if len(f.violations) != 1 || f.violations[0].Field.String() != "env" || f.grant.Action() != policy.ActionDeny {
		t.Fatalf("refused change: found %+v, want one env violation under a deny grant", f)
	}
	var derr *policy.DeniedError
	if err := f.err("10-env", s); !errors.As(err, &derr) || derr.Plugin != "10-env" || derr.Action != policy.ActionDeny {
		t.Errorf("refusal %v, want a DeniedError of 10-env with action deny", err)
	}

	// A reload narrowed the where and the where index is not ready: an
	// update of another container cannot be checked.
	where, err := filter.Compile(&api.PluginScope{Namespaces: []string{"gpu-*"}})
	if err != nil {
		t.Fatal(err)
	}
	gs = &grantState{grant: pol.GrantFor("10", "env"), where: where, recheck: true}
	upd := &api.UpdateContainerResponse{Update: []*api.ContainerUpdate{{ContainerId: "other"}}}
	f = checkGrant(gs, answerTargets{s: s, rechecks: gs.rechecks(), plugin: "10-env"}, upd)
	var werr *WhereUncheckedError
	if !errors.As(f.unchecked, &werr) || werr.Container != "other" || !errors.As(f.err("10-env", s), &werr) {
		t.Errorf("unchecked target: found %+v, want a WhereUncheckedError for container other", f)
	}
}
