package core

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub/handler"
)

// TestDeclareOptions checks that every non-zero field of a
// handler.Declarations becomes its option, with its value, and that the
// zero value declares nothing.
func TestDeclareOptions(t *testing.T) {
	type opt = func(*[]string) error
	note := func(s string) opt { return func(got *[]string) error { *got = append(*got, s); return nil } }
	declare := Declare[opt]{
		Subscription:   func(m api.EventMask) opt { return note(fmt.Sprintf("subscription=%s", m.String())) },
		RequiredEvents: func(m api.EventMask) opt { return note(fmt.Sprintf("required=%s", m.String())) },
		RequiredCapabilities: func(cs ...capability.Capability) opt {
			return note(fmt.Sprintf("capabilities=%s", capability.NewSet(cs...)))
		},
		Scope:         func(s *api.PluginScope) opt { return note(fmt.Sprintf("scope=%v", s.GetNamespaces())) },
		FailurePolicy: func(p *api.FailurePolicy) opt { return note(fmt.Sprintf("fail-request=%v", p.GetFailRequest())) },
		DefaultConfig: func(s string) opt { return note("config=" + s) },
		ObserveOnly:   func() opt { return note("observe-only") },
	}
	var got []string
	if err := Apply(&got, declare.Options(handler.Declarations{})); err != nil || got != nil {
		t.Errorf("zero declarations: %q, %v; want none", got, err)
	}
	d := handler.Declarations{
		Subscription:         api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER),
		RequiredEvents:       api.MaskOf(api.Event_CREATE_CONTAINER),
		RequiredCapabilities: capability.NewSet(capability.Env, capability.Mounts),
		Scope:                &api.PluginScope{Namespaces: []string{"team-*"}},
		FailurePolicy:        &api.FailurePolicy{FailRequest: true},
		DefaultConfig:        "x: 1",
		ObserveOnly:          true,
	}
	if err := Apply(&got, declare.Options(d)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"subscription=" + d.Subscription.String(),
		"required=" + d.RequiredEvents.String(),
		"capabilities=mounts,env",
		"scope=[team-*]",
		"fail-request=true",
		"config=x: 1",
		"observe-only",
	}
	if !slices.Equal(got, want) {
		t.Errorf("options applied %q, want %q", got, want)
	}

	errBad := errors.New("bad")
	bad := func(*[]string) error { return errBad }
	if err := Apply(&got, []opt{note("a"), bad, note("b")}); !errors.Is(err, errBad) || got[len(got)-1] != "a" {
		t.Errorf("Apply with a failing option: %v, applied %q; want its error, and nothing after it", err, got)
	}
}
