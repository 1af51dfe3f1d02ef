package api_test

import (
	"maps"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestOwnerAccessors(t *testing.T) {
	o := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{
		"c1": {
			Simple: map[int32]string{
				api.Field_MemLimit.Key():      "10-a",
				api.Field_OciHooks.Key():      "10-a,20-b",
				api.Field_Args.Key():          "-20-b",
				api.Field_SeccompPolicy.Key(): "30-c",
			},
			Compound: map[int32]*api.CompoundFieldOwners{
				api.Field_Env.Key():       {Owners: map[string]string{"FOO": "10-a", "BAR": "-20-b"}},
				api.Field_Namespace.Key(): {Owners: map[string]string{"network": "30-c"}},
			},
		},
	}}
	for _, tc := range []struct {
		name      string
		got       string
		ok        bool
		want      string
		wantFound bool
	}{
		{"mem limit", fst(o.MemLimitOwner("c1")), snd(o.MemLimitOwner("c1")), "10-a", true},
		{"generic simple", fst(o.SimpleOwner("c1", api.Field_MemLimit)), snd(o.SimpleOwner("c1", api.Field_MemLimit)), "10-a", true},
		{"hooks", fst(o.HooksOwner("c1")), snd(o.HooksOwner("c1")), "10-a,20-b", true},
		{"args (removed)", fst(o.ArgsOwner("c1")), snd(o.ArgsOwner("c1")), "-20-b", true},
		{"seccomp", fst(o.SeccompPolicyOwner("c1")), snd(o.SeccompPolicyOwner("c1")), "30-c", true},
		{"unset simple", fst(o.CPUSharesOwner("c1")), snd(o.CPUSharesOwner("c1")), "", false},
		{"other container", fst(o.MemLimitOwner("c2")), snd(o.MemLimitOwner("c2")), "", false},
		{"env", fst(o.EnvOwner("c1", "FOO")), snd(o.EnvOwner("c1", "FOO")), "10-a", true},
		{"env removed", fst(o.EnvOwner("c1", "BAR")), snd(o.EnvOwner("c1", "BAR")), "-20-b", true},
		{"env unset", fst(o.EnvOwner("c1", "BAZ")), snd(o.EnvOwner("c1", "BAZ")), "", false},
		{"generic compound", fst(o.CompoundOwner("c1", api.Field_Env, "FOO")), snd(o.CompoundOwner("c1", api.Field_Env, "FOO")), "10-a", true},
		{"mount unset field", fst(o.MountOwner("c1", "/m")), snd(o.MountOwner("c1", "/m")), "", false},
		{"namespace", fst(o.NamespaceOwner("c1", "network")), snd(o.NamespaceOwner("c1", "network")), "30-c", true},
	} {
		if tc.got != tc.want || tc.ok != tc.wantFound {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, tc.got, tc.ok, tc.want, tc.wantFound)
		}
	}
	ns, ok := o.NamespaceOwners("c1")
	if !ok || !maps.Equal(ns, map[string]string{"network": "30-c"}) {
		t.Errorf("NamespaceOwners = %v, %v", ns, ok)
	}
	if _, ok := o.CompoundOwners("c1", api.Field_Mounts); ok {
		t.Errorf("CompoundOwners of untouched field reported")
	}
	var none *api.OwningPlugins
	if _, ok := none.MemLimitOwner("c1"); ok {
		t.Errorf("nil OwningPlugins reported an owner")
	}
	if _, ok := none.NamespaceOwners("c1"); ok {
		t.Errorf("nil OwningPlugins reported namespace owners")
	}
	if n := api.NewOwningPlugins(); n.Owners == nil {
		t.Errorf("NewOwningPlugins has no map")
	}
	if f := api.NewFieldOwners(); f.Simple == nil || f.Compound == nil {
		t.Errorf("NewFieldOwners has no maps")
	}
}

func fst(s string, _ bool) string { return s }
func snd(_ string, ok bool) bool  { return ok }
