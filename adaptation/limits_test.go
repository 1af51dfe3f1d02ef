package adaptation

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// newLimited returns the limits in force of an Adaptation made with opts,
// or New's error.
func newLimited(t *testing.T, opts ...Option) (Limits, error) {
	t.Helper()
	st := runtimetest.NewStore()
	a, err := New("r", "v", st.List, st.Update, opts...)
	if err != nil {
		return Limits{}, err
	}
	return a.Limits(), nil
}

func TestLimitsDefaults(t *testing.T) {
	want := DefaultLimits()
	if want.MaxPluginRequestTimeout != 0 || want.SynchronizeWait != 0 {
		t.Errorf("DefaultLimits: MaxPluginRequestTimeout %v, SynchronizeWait %v, want 0 (the request timeout)",
			want.MaxPluginRequestTimeout, want.SynchronizeWait)
	}
	want.MaxPluginRequestTimeout, want.SynchronizeWait = api.DefaultRequestTimeout, api.DefaultRequestTimeout
	for name, opts := range map[string][]Option{
		"no option":        nil,
		"WithLimits(zero)": {WithLimits(Limits{})},
		"defaults":         {WithLimits(DefaultLimits())},
		// WithLimits sets every bound: a zero field is the default, not
		// what an earlier option set.
		"after an option": {WithMaxAnswerSize(5), WithLimits(Limits{})},
	} {
		got, err := newLimited(t, opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: limits\n%+v, want the defaults\n%+v", name, got, want)
		}
	}
	// Every field but the two that follow RequestTimeout and the budget
	// (0: none) has a non-zero default, so that zero can mean it.
	v := reflect.ValueOf(DefaultLimits())
	for i := range v.NumField() {
		switch f := v.Type().Field(i).Name; f {
		case "MaxPluginRequestTimeout", "SynchronizeWait", "WASMMemoryBudget":
		default:
			if v.Field(i).IsZero() {
				t.Errorf("DefaultLimits().%s is zero", f)
			}
		}
	}
}

func TestLimitsZeroMeansDefault(t *testing.T) {
	got, err := newLimited(t, WithLimits(Limits{RequestTimeout: 7 * time.Second, MaxAnswerSize: 4096}))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultLimits()
	want.RequestTimeout, want.MaxAnswerSize = 7*time.Second, 4096
	want.MaxPluginRequestTimeout, want.SynchronizeWait = 7*time.Second, 7*time.Second
	if got != want {
		t.Errorf("limits\n%+v, want\n%+v", got, want)
	}
	// An option after WithLimits changes its field only.
	got, err = newLimited(t, WithLimits(Limits{MaxAnswerSize: 4096}), WithRequestTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxAnswerSize != 4096 || got.RequestTimeout != time.Minute {
		t.Errorf("MaxAnswerSize %d, RequestTimeout %v, want 4096 and 1m0s", got.MaxAnswerSize, got.RequestTimeout)
	}
}

func TestLimitsRefused(t *testing.T) {
	for _, tc := range []struct {
		field string
		l     Limits
		value string
	}{
		{"RegistrationTimeout", Limits{RegistrationTimeout: -time.Second}, "-1s"},
		{"RequestTimeout", Limits{RequestTimeout: -1}, "-1ns"},
		{"MaxPluginRequestTimeout", Limits{MaxPluginRequestTimeout: -1}, "-1ns"},
		{"SynchronizeTimeout", Limits{SynchronizeTimeout: -1}, "-1ns"},
		{"SynchronizeBudget", Limits{SynchronizeBudget: -1}, "-1ns"},
		{"SynchronizeWait", Limits{SynchronizeWait: -1}, "-1ns"},
		{"TerminationGrace", Limits{TerminationGrace: -1}, "-1ns"},
		{"MaxPendingConnections", Limits{MaxPendingConnections: -1}, "-1"},
		{"MaxPendingConnectionsPerPeer", Limits{MaxPendingConnectionsPerPeer: -1}, "-1"},
		{"MaxInFlightUpdates", Limits{MaxInFlightUpdates: -1}, "-1"},
		{"MaxAnswerSize", Limits{MaxAnswerSize: MaxMessageSize + 1}, "4194305"},
		{"MaxPluginConfigSize", Limits{MaxPluginConfigSize: -1}, "-1"},
		{"PluginLogRate", Limits{PluginLogRate: -0.5}, "-0.5"},
		{"PluginLogBurst", Limits{PluginLogBurst: -1}, "-1"},
		{"MaxWASMModuleSize", Limits{MaxWASMModuleSize: 7}, "7"},
		{"MaxConcurrentWASMLoads", Limits{MaxConcurrentWASMLoads: -1}, "-1"},
		{"WASMLoadTimeout", Limits{WASMLoadTimeout: -1}, "-1ns"},
		{"WASMMemoryLimit", Limits{WASMMemoryLimit: 1000}, "1000"},
		{"WASMMemoryLimit", Limits{WASMMemoryLimit: 5 << 30}, "5368709120"},
		{"PolicyReloadInterval", Limits{PolicyReloadInterval: -1}, "-1ns"},
	} {
		_, err := newLimited(t, WithLimits(tc.l))
		var lerr *LimitError
		if !errors.As(err, &lerr) || lerr.Field != tc.field {
			t.Errorf("%s: error %v, want a LimitError of the field", tc.field, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "limit "+tc.field+" is "+tc.value+": must be ") {
			t.Errorf("%s: message %q names not the field and the value %s", tc.field, msg, tc.value)
		}
	}
}

// TestLimitOptionsSetTheirField checks that each option of one bound and
// the Limits field reach the same place, the limits in force, and that
// every field has its option.
func TestLimitOptionsSetTheirField(t *testing.T) {
	d := time.Duration(3_000_017) * time.Microsecond // no default's value
	fields := map[string]bool{}
	for _, tc := range []struct {
		field string
		opt   Option
		set   func(*Limits)
	}{
		{"RegistrationTimeout", WithRegistrationTimeout(d), func(l *Limits) { l.RegistrationTimeout = d }},
		{"RequestTimeout", WithRequestTimeout(d), func(l *Limits) { l.RequestTimeout = d }},
		{"MaxPluginRequestTimeout", WithMaxPluginRequestTimeout(d), func(l *Limits) { l.MaxPluginRequestTimeout = d }},
		{"SynchronizeTimeout", WithSynchronizeTimeout(d), func(l *Limits) { l.SynchronizeTimeout = d }},
		{"SynchronizeBudget", WithSynchronizeBudget(d), func(l *Limits) { l.SynchronizeBudget = d }},
		{"SynchronizeWait", WithSynchronizeWait(d), func(l *Limits) { l.SynchronizeWait = d }},
		{"TerminationGrace", WithTerminationGrace(d), func(l *Limits) { l.TerminationGrace = d }},
		{"MaxPendingConnections", WithMaxPendingConnections(3), func(l *Limits) { l.MaxPendingConnections = 3 }},
		{"MaxPendingConnectionsPerPeer", WithMaxPendingConnectionsPerPeer(3), func(l *Limits) { l.MaxPendingConnectionsPerPeer = 3 }},
		{"MaxInFlightUpdates", WithMaxInFlightUpdates(3), func(l *Limits) { l.MaxInFlightUpdates = 3 }},
		{"MaxAnswerSize", WithMaxAnswerSize(3), func(l *Limits) { l.MaxAnswerSize = 3 }},
		{"MaxPluginConfigSize", WithMaxPluginConfigSize(3), func(l *Limits) { l.MaxPluginConfigSize = 3 }},
		{"PluginLogRate", WithPluginLogLimit(3, DefaultPluginLogBurst), func(l *Limits) { l.PluginLogRate = 3 }},
		{"PluginLogBurst", WithPluginLogLimit(DefaultPluginLogRate, 3), func(l *Limits) { l.PluginLogBurst = 3 }},
		{"MaxWASMModuleSize", WithMaxWASMModuleSize(300), func(l *Limits) { l.MaxWASMModuleSize = 300 }},
		{"MaxConcurrentWASMLoads", WithMaxConcurrentWASMLoads(3), func(l *Limits) { l.MaxConcurrentWASMLoads = 3 }},
		{"WASMLoadTimeout", WithWASMLoadTimeout(d), func(l *Limits) { l.WASMLoadTimeout = d }},
		{"WASMMemoryLimit", WithWASMMemoryLimit(3 * wasmPageSize), func(l *Limits) { l.WASMMemoryLimit = 3 * wasmPageSize }},
		{"WASMMemoryBudget", WithWASMMemoryBudget(3), func(l *Limits) { l.WASMMemoryBudget = 3 }},
		{"PolicyReloadInterval", WithPolicyReloadInterval(d), func(l *Limits) { l.PolicyReloadInterval = d }},
	} {
		fields[tc.field] = true
		byOption, err := newLimited(t, tc.opt)
		if err != nil {
			t.Fatalf("%s: option: %v", tc.field, err)
		}
		var l Limits
		tc.set(&l)
		byField, err := newLimited(t, WithLimits(l))
		if err != nil {
			t.Fatalf("%s: WithLimits: %v", tc.field, err)
		}
		defaults, _ := newLimited(t)
		if byOption != byField || byOption == defaults {
			t.Errorf("%s: the option gives\n%+v\nthe field\n%+v\n(defaults %+v)", tc.field, byOption, byField, defaults)
		}
	}
	for f := range reflect.TypeFor[Limits]().Fields() {
		if !fields[f.Name] {
			t.Errorf("Limits.%s has no option in the test", f.Name)
		}
	}
}

// TestLimitsReachTheirUse checks a few of the bounds where the
// Adaptation uses them: the plugin's request timeout and its cap, and the
// WASM memory limit in pages.
func TestLimitsReachTheirUse(t *testing.T) {
	st := runtimetest.NewStore()
	a, err := New("r", "v", st.List, st.Update, WithLimits(Limits{RequestTimeout: 3 * time.Second, WASMMemoryLimit: 5*wasmPageSize + 1}))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.effectiveTimeout(0); got != 3*time.Second {
		t.Errorf("request timeout %v, want 3s", got)
	}
	if got := a.effectiveTimeout(time.Hour); got != 3*time.Second {
		t.Errorf("a plugin asking for an hour gets %v, want the request timeout, 3s", got)
	}
	if got := a.cfg.limits.wasmMemoryPages(); got != 5 {
		t.Errorf("WASM memory limit %d pages, want 5", got)
	}
}
