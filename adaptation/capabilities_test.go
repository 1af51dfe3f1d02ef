package adaptation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"google.golang.org/grpc/codes"
)

// capsPlugin is a builtin plugin that records the capabilities its
// Configure request told it and requires those of its field.
type capsPlugin struct {
	inproc
	require []string

	mu   sync.Mutex
	told *api.CapabilitySet
	seen bool
}

func (p *capsPlugin) Configure(_ context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	p.mu.Lock()
	p.told, p.seen = req.GetCapabilities(), true
	p.mu.Unlock()
	return &api.ConfigureResponse{
		Events:               int32(api.MaskOf(api.Event_CREATE_CONTAINER)),
		RequiredCapabilities: p.require,
	}, nil
}

// toldNames returns the names the plugin was told, and whether it was
// told at all.
func (p *capsPlugin) toldNames(t *testing.T) ([]string, bool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.seen {
		t.Fatal("the plugin was not sent Configure")
	}
	return p.told.GetNames(), p.told != nil
}

func TestCapabilitiesTold(t *testing.T) {
	applied := capability.NewSet(capability.Env, capability.Annotations, capability.Mounts, capability.UpdateCPU, capability.Evict)
	// The plugin's grant allows env and args; the default grant, which
	// does not name it, is not its own.
	grants := parsePolicy(t, "grants:\n  - plugins: [caps]\n    adjust:\n      env: [\"*\"]\n      args: true\ndefault:\n  adjust:\n    annotations: [\"*\"]\n")
	for _, tc := range []struct {
		name string
		opts []Option
		want capability.Set
	}{
		{"undeclared: all", nil, capability.All()},
		{"declared", []Option{WithAppliedCapabilities(applied)}, applied},
		{"declared empty", []Option{WithAppliedCapabilities(capability.Set{})}, capability.Set{}},
		{"within the grant", []Option{WithPolicy(grants)}, capability.NewSet(capability.Env, capability.Args)},
		{"declared, within the grant", []Option{WithAppliedCapabilities(applied), WithPolicy(grants)}, capability.NewSet(capability.Env)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &capsPlugin{}
			rt := newTestRuntime(t, nil, append(tc.opts, WithBuiltinPlugin("10", "caps", svc))...)
			rt.start(t)
			names, told := svc.toldNames(t)
			if !told {
				t.Fatal("the Configure request told no capabilities (field absent)")
			}
			got, unknown := capability.ParseSet(names)
			if got != tc.want || len(unknown) != 0 || len(names) != tc.want.Len() {
				t.Errorf("told %q, want %q", names, tc.want.Names())
			}
			rt.logs.wait(t, "configured log line", func(r logRecord) bool {
				return r.msg == "plugin configured" && r.attrs["plugin"] == "10-caps" && r.attrs["capabilities"] == tc.want.String()
			})
		})
	}
}

func TestRequiredCapabilities(t *testing.T) {
	applied := capability.NewSet(capability.Env, capability.Annotations, capability.Mounts)
	ok := &capsPlugin{require: []string{"env", "mounts"}}
	refused := &capsPlugin{require: []string{"env", "linux.devices", "evict"}}
	rt := newTestRuntime(t, nil, WithAppliedCapabilities(applied),
		WithBuiltinPlugin("10", "ok", ok), WithBuiltinPlugin("20", "refused", refused))
	rt.start(t)
	if p, found := rt.plugin("10-ok"); !found || p.State != StateActive {
		t.Errorf("plugin requiring what is applied: %+v (found %v)", p, found)
	}
	if p, found := rt.plugin("20-refused"); found {
		t.Errorf("plugin requiring what is not applied is registered: %+v", p)
	}
	want := `plugin "20-refused" requires capabilities this runtime does not honour for it: linux.devices, evict; honoured: annotations,mounts,env`
	rt.logs.wait(t, "refusal logged", func(r logRecord) bool {
		return r.attrs["plugin"] == "20-refused" && r.attrs["error"] == want
	})
	createWorks(t, rt, 0, "INPROC=1")
}

func TestCheckRequiredCapabilities(t *testing.T) {
	told := capability.NewSet(capability.Env, capability.Args)
	long := strings.Repeat("x", 100)
	many := make([]string, maxRequiredCapabilities+1)
	for i := range many {
		many[i] = "env"
	}
	unknown := make([]string, maxNamesShown+3)
	for i := range unknown {
		unknown[i] = fmt.Sprintf("u%d", i)
	}
	for _, tc := range []struct {
		name     string
		required []string
		code     codes.Code
		reason   string // "": accepted
	}{
		{"none", nil, 0, ""},
		{"all told", []string{"args", "env", "env"}, 0, ""},
		{"missing", []string{"env", "hooks", "linux.sysctl"}, codes.FailedPrecondition,
			`plugin "10-p" requires capabilities this runtime does not honour for it: hooks, linux.sysctl; honoured: env,args`},
		{"unknown clipped", []string{long}, codes.FailedPrecondition,
			`plugin "10-p" requires capabilities this runtime does not honour for it: "` + clip(long) + `" (unknown); honoured: env,args`},
		{"unknown bounded", unknown, codes.FailedPrecondition,
			`plugin "10-p" requires capabilities this runtime does not honour for it: "u0" (unknown), "u1" (unknown), "u2" (unknown), "u3" (unknown), "u4" (unknown), "u5" (unknown), "u6" (unknown), "u7" (unknown), (3 more unknown); honoured: env,args`},
		{"too many names", many, codes.InvalidArgument,
			fmt.Sprintf(`plugin "10-p" requires %d capabilities; at most %d names are accepted`, len(many), maxRequiredCapabilities)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRequiredCapabilities("10-p", told, tc.required)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Code != tc.code || err.Reason != tc.reason {
				t.Errorf("got %v %q\nwant %v %q", err.Code, err.Reason, tc.code, tc.reason)
			}
			if want := tc.code == codes.FailedPrecondition; errors.Is(err, ErrMissingCapabilities) != want {
				t.Errorf("errors.Is(err, ErrMissingCapabilities) = %v, want %v", !want, want)
			}
		})
	}
}

func TestCapabilitySetNames(t *testing.T) {
	caps := capability.NewSet(capability.Evict, capability.Devices, capability.Env)
	got := capabilitySet(caps).GetNames()
	if want := []string{"env", "linux.devices", "evict"}; !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if names := capabilitySet(capability.Set{}); names == nil || len(names.GetNames()) != 0 {
		t.Errorf("the empty set is %v, want a present, empty set", names)
	}
}
