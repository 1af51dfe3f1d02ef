package ocispec

import (
	"errors"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

func TestApplyInvalidInput(t *testing.T) {
	cases := []struct {
		name  string
		adj   *api.ContainerAdjustment
		field string
	}{
		{"unknown device type", linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{
			{Path: "/dev/ok", Type: "c", Major: 1, Minor: 3}, {Path: "/dev/x", Type: "q"},
		}}), "linux.devices[1].type"},
		{"negative device number", linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/x", Type: "c", Major: -1}}}), "linux.devices[0]"},
		{"empty device path", linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-", Type: "c"}}}), "linux.devices[0].path"},
		{"negative hugepage size", resAdj(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "-2MB", Limit: 1}}}), "linux.resources.hugepage_limits[0].page_size"},
		{"hugepage size without unit", resAdj(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2048"}}}), "linux.resources.hugepage_limits[0].page_size"},
		{"zero hugepage size", resAdj(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "0MB"}}}), "linux.resources.hugepage_limits[0].page_size"},
		{"device rule type", resAdj(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Type: "p", Access: "rw"}}}), "linux.resources.devices[0].type"},
		{"device rule access", resAdj(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Type: "c", Access: "rx"}}}), "linux.resources.devices[0].access"},
		{"empty unified key", resAdj(&api.LinuxResources{Unified: map[string]string{"": "1"}}), "linux.resources.unified"},
		{"namespace type", linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "net"}}}), "linux.namespaces[0].type"},
		{"removed namespace type", linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-bogus"}}}), "linux.namespaces[0].type"},
		{"env name", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A", Value: "1"}, {Key: "B=C"}}}, "env[1]"},
		{"empty env name", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "-"}}}, "env[0]"},
		{"empty annotation key", &api.ContainerAdjustment{Annotations: map[string]string{"-": ""}}, "annotations"},
		{"empty sysctl key", linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"": "1"}}), "linux.sysctl"},
		{"empty net device key", linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"-": nil}}), "linux.net_devices"},
		{"mount destination", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: ""}}}, "mounts[0].destination"},
		{"hook path", &api.ContainerAdjustment{Hooks: &api.Hooks{Poststop: []*api.Hook{{Path: "/ok"}, {}}}}, "hooks.poststop[1].path"},
		{"CDI name", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "gpu0"}}}, "CDI_devices[0].name"},
		{"io priority class", linuxAdj(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: 42}}), "linux.io_priority.class"},
		{"scheduler policy", linuxAdj(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: 99}}), "linux.scheduler.policy"},
		{"scheduler flag", linuxAdj(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_RR, Flags: []api.LinuxSchedulerFlag{99}}}), "linux.scheduler.flags[0]"},
		{"memory policy mode", linuxAdj(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{Mode: 77}}), "linux.memory_policy.mode"},
		{"memory policy flag", linuxAdj(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{Flags: []api.MpolFlag{9}}}), "linux.memory_policy.flags[0]"},
		{"seccomp rule names", linuxAdj(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{Syscalls: []*api.LinuxSyscall{{Action: "SCMP_ACT_ALLOW"}}}}), "linux.seccomp_policy.syscalls[0].names"},
		{"rlimit type", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "NOFILE"}}}, "rlimits[0].type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Valid changes elsewhere in the adjustment must not be made
			// either: Apply validates everything first.
			tc.adj.Annotations = mergeMaps(tc.adj.Annotations, map[string]string{"valid": "yes"})
			spec := &rspec.Spec{Process: &rspec.Process{Env: []string{"A=0"}}, Annotations: map[string]string{"keep": "1"}}
			before := cloneSpec(t, spec)
			err := Apply(spec, tc.adj)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Apply error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (error %v)", fe.Field, tc.field, err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("error %q does not start with the field", err)
			}
			assertSpec(t, spec, before)
		})
	}
}

// mergeMaps returns a copy of a with the entries of b that a lacks.
func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range a {
		out[k] = v
	}
	return out
}

func TestApplyCallbackErrors(t *testing.T) {
	boom := errors.New("boom")
	str := func(v string) *api.OptionalString { return &api.OptionalString{Value: v} }
	cases := []struct {
		name  string
		adj   *api.ContainerAdjustment
		opt   Option
		field string
		keeps bool // spec untouched: the callback runs before any change
	}{
		{"block I/O resolver", resAdj(&api.LinuxResources{BlockioClass: str("x")}),
			WithBlockIOClassResolver(func(string) (*rspec.LinuxBlockIO, error) { return nil, boom }), "linux.resources.blockio_class", true},
		{"RDT resolver", resAdj(&api.LinuxResources{RdtClass: str("x")}),
			WithRDTClassResolver(func(string) (*rspec.LinuxIntelRdt, error) { return nil, boom }), "linux.resources.rdt_class", true},
		{"annotation filter", &api.ContainerAdjustment{Annotations: map[string]string{"a": "b"}},
			WithAnnotationFilter(func(map[string]string) (map[string]string, error) { return nil, boom }), "annotations", true},
		{"sysctl filter", linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"a": "b"}}),
			WithSysctlFilter(func(map[string]string) (map[string]string, error) { return nil, boom }), "linux.sysctl", true},
		{"propagation checker", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "/m", Source: "/h", Options: []string{"rshared"}}}},
			WithPropagationChecker(func(string, string) error { return boom }), "mounts[0].source", true},
		{"CDI injector", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "v.com/c=d"}}},
			WithCDIDeviceInjector(func(*rspec.Spec, []string) error { return boom }), "CDI_devices", false},
		{"resource checker", resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "1"}}),
			WithCheckResources(func(*rspec.LinuxResources) error { return boom }), "linux.resources", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &rspec.Spec{Annotations: map[string]string{"keep": "1"}}
			before := cloneSpec(t, spec)
			err := Apply(spec, tc.adj, tc.opt)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, boom) {
				t.Fatalf("Apply error = %v, want a FieldError for %s wrapping %v", err, tc.field, boom)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("callback error %v matches ErrInvalid", err)
			}
			if tc.keeps {
				assertSpec(t, spec, before)
			}
		})
	}
}

func TestOptionsRejectNil(t *testing.T) {
	opts := map[string]Option{
		"WithBlockIOClassResolver": WithBlockIOClassResolver(nil),
		"WithRDTClassResolver":     WithRDTClassResolver(nil),
		"WithCheckResources":       WithCheckResources(nil),
		"WithCDIDeviceInjector":    WithCDIDeviceInjector(nil),
		"WithAnnotationFilter":     WithAnnotationFilter(nil),
		"WithSysctlFilter":         WithSysctlFilter(nil),
		"WithPropagationChecker":   WithPropagationChecker(nil),
	}
	for name, o := range opts {
		err := Apply(&rspec.Spec{}, &api.ContainerAdjustment{}, o)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s(nil): error %v, want one naming the option", name, err)
		}
		if err := ApplyUpdate(&rspec.Spec{}, &api.ContainerUpdate{}, o); err == nil {
			t.Errorf("ApplyUpdate with %s(nil) succeeded", name)
		}
	}
}

func TestFiltersAndPropagationChecker(t *testing.T) {
	var checked []string
	spec := &rspec.Spec{}
	err := Apply(spec, &api.ContainerAdjustment{
		Annotations: map[string]string{"ok": "1", "secret": "2"},
		Mounts: []*api.Mount{
			{Destination: "/a", Source: "/ha", Options: []string{"rbind", "rslave"}},
			{Destination: "/b", Source: "/hb", Options: []string{"rprivate"}},
		},
		Linux: &api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.x": "1", "kernel.y": "2"}},
	},
		WithAnnotationFilter(func(m map[string]string) (map[string]string, error) { delete(m, "secret"); return m, nil }),
		WithSysctlFilter(func(m map[string]string) (map[string]string, error) { delete(m, "kernel.y"); return m, nil }),
		WithPropagationChecker(func(src, prop string) error { checked = append(checked, src+":"+prop); return nil }),
	)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(spec.Annotations) != 1 || spec.Annotations["ok"] != "1" {
		t.Errorf("annotations = %v, want only ok=1", spec.Annotations)
	}
	if len(spec.Linux.Sysctl) != 1 || spec.Linux.Sysctl["net.x"] != "1" {
		t.Errorf("sysctl = %v, want only net.x=1", spec.Linux.Sysctl)
	}
	if len(checked) != 1 || checked[0] != "/ha:rslave" {
		t.Errorf("propagation checks = %q, want [/ha:rslave]", checked)
	}
}
