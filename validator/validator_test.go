package validator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
	"github.com/nrikit/nrikit/validator"
)

type answer struct {
	plugin string
	build  func(a *api.ContainerAdjustment)
}

// request builds the validation request a runtime sends after merging the
// answers of the given plugins.
func request(t *testing.T, pod *api.PodSandbox, ctr *api.Container, answers ...answer) *api.ValidateContainerAdjustmentRequest {
	t.Helper()
	m := merge.NewCreate(pod, ctr)
	req := &api.ValidateContainerAdjustmentRequest{Pod: pod, Container: ctr}
	for _, a := range answers {
		idx, name, err := api.ParsePluginName(a.plugin)
		if err != nil {
			t.Fatal(err)
		}
		req.Plugins = append(req.Plugins, &api.PluginInstance{Name: name, Index: idx})
		adj := &api.ContainerAdjustment{}
		if a.build != nil {
			a.build(adj)
		}
		if err := m.Apply(a.plugin, &api.CreateContainerResponse{Adjust: adj}); err != nil {
			t.Fatal(err)
		}
	}
	req.Adjust, req.Update, req.Owners = m.Adjustment(), m.Updates(), m.Owners()
	return req
}

func pod(annotations map[string]string) *api.PodSandbox {
	return &api.PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default", Annotations: annotations}
}

func container(profile *api.SecurityProfile) *api.Container {
	return &api.Container{Id: "ctr0", Name: "app", PodSandboxId: "pod0", Linux: &api.LinuxContainer{SeccompProfile: profile}}
}

// check validates req and compares the outcome: want "" means accepted,
// otherwise the exact rejection text.
func check(t *testing.T, cfg validator.Config, req *api.ValidateContainerAdjustmentRequest, want string) {
	t.Helper()
	err := validator.New(cfg).Validate(context.Background(), req)
	switch {
	case want == "" && err != nil:
		t.Errorf("rejected: %v", err)
	case want != "" && err == nil:
		t.Errorf("accepted, want rejection %q", want)
	case want != "":
		if !errors.Is(err, validator.ErrValidation) {
			t.Errorf("error %v does not wrap ErrValidation", err)
		}
		if err.Error() != want {
			t.Errorf("rejection %q\n          want %q", err, want)
		}
	}
}

func addHook(a *api.ContainerAdjustment) {
	a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/true"}}})
}

func setSeccomp(a *api.ContainerAdjustment) {
	a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"})
}

func TestDisabledAcceptsEverything(t *testing.T) {
	cfg := validator.Config{
		RejectOCIHookAdjustment: true, RejectUnconfinedSeccompAdjustment: true, RejectNamespaceAdjustment: true,
		RejectSysctlAdjustment: true, RequiredPlugins: []string{"missing"},
	}
	req := request(t, pod(nil), container(nil), answer{"10-a", func(a *api.ContainerAdjustment) {
		addHook(a)
		setSeccomp(a)
		a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network"})
		a.SetLinuxSysctl("k", "v")
	}})
	check(t, cfg, req, "")
	cfg.Enable = true
	check(t, cfg, req, `validation error: plugin "10-a" attempted restricted OCI hook injection`)
	check(t, cfg, nil, "")
}

func TestOCIHooks(t *testing.T) {
	on := validator.Config{Enable: true, RejectOCIHookAdjustment: true}
	check(t, on, request(t, pod(nil), container(nil), answer{"10-a", addHook}),
		`validation error: plugin "10-a" attempted restricted OCI hook injection`)
	check(t, on, request(t, pod(nil), container(nil), answer{"10-a", addHook}, answer{"20-b", nil}, answer{"30-c", addHook}),
		`validation error: plugins "10-a,30-c" attempted restricted OCI hook injection`)
	check(t, on, request(t, pod(nil), container(nil), answer{"10-a", func(a *api.ContainerAdjustment) { a.AddEnv("A", "1") }}), "")
	check(t, validator.Config{Enable: true}, request(t, pod(nil), container(nil), answer{"10-a", addHook}), "")
}

func TestSeccompPolicy(t *testing.T) {
	profiles := []struct {
		name    string
		profile *api.SecurityProfile
		kind    string
	}{
		{"none", nil, "unconfined"},
		{"unconfined", &api.SecurityProfile{ProfileType: api.SecurityProfile_UNCONFINED}, "unconfined"},
		{"runtime default", &api.SecurityProfile{ProfileType: api.SecurityProfile_RUNTIME_DEFAULT}, "runtime default"},
		{"localhost", &api.SecurityProfile{ProfileType: api.SecurityProfile_LOCALHOST, LocalhostRef: "p.json"}, "custom"},
	}
	configs := map[string]validator.Config{
		"unconfined":      {Enable: true, RejectUnconfinedSeccompAdjustment: true},
		"runtime default": {Enable: true, RejectRuntimeDefaultSeccompAdjustment: true},
		"custom":          {Enable: true, RejectCustomSeccompAdjustment: true},
	}
	for _, p := range profiles {
		for rejected, cfg := range configs {
			t.Run(p.name+"/reject "+rejected, func(t *testing.T) {
				want := ""
				if p.kind == rejected {
					want = `validation error: plugin "10-a" attempted restricted ` + rejected + ` seccomp policy adjustment`
				}
				check(t, cfg, request(t, pod(nil), container(p.profile), answer{"10-a", setSeccomp}), want)
				// Without a seccomp adjustment there is nothing to reject.
				check(t, cfg, request(t, pod(nil), container(p.profile), answer{"10-a", addHook}), "")
			})
		}
	}
}

func TestNamespaces(t *testing.T) {
	on := validator.Config{Enable: true, RejectNamespaceAdjustment: true}
	req := request(t, pod(nil), container(nil),
		answer{"10-a", func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network", Path: "/netns"})
		}},
		answer{"20-b", func(a *api.ContainerAdjustment) { a.RemoveNamespace(&api.LinuxNamespace{Type: "ipc"}) }},
	)
	check(t, on, req, `validation error: attempted restricted namespace adjustment by plugin(s) "20-b" (namespace "ipc"), "10-a" (namespace "network")`)
	check(t, validator.Config{Enable: true}, req, "")
	check(t, on, request(t, pod(nil), container(nil), answer{"10-a", addHook}), "")
}

func TestSysctl(t *testing.T) {
	on := validator.Config{Enable: true, RejectSysctlAdjustment: true}
	req := request(t, pod(nil), container(nil),
		answer{"10-a", func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("net.core.somaxconn", "256") }},
		answer{"20-b", func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("kernel.shmmax", "1") }},
	)
	check(t, on, req, `validation error: attempted restricted sysctl adjustment by plugin(s) "20-b" (sysctl "kernel.shmmax"), "10-a" (sysctl "net.core.somaxconn")`)
	check(t, validator.Config{Enable: true}, req, "")
	check(t, on, request(t, pod(nil), container(nil), answer{"10-a", addHook}), "")
}

func TestRequiredPlugins(t *testing.T) {
	const tolerate = "tolerate-missing.example.com"
	plugins := []answer{{"10-resmgr", nil}, {"20-logger", nil}}
	for _, tc := range []struct {
		name        string
		required    []string
		annotations map[string]string
		want        string
	}{
		{"none required", nil, nil, ""},
		{"by name", []string{"resmgr"}, nil, ""},
		{"by full name", []string{"10-resmgr", "20-logger"}, nil, ""},
		{"wrong index", []string{"30-resmgr"}, nil, `validation error: required plugin "30-resmgr" not present`},
		{"missing", []string{"resmgr", "gpu"}, nil, `validation error: required plugin "gpu" not present`},
		{"several missing", []string{"gpu", "net"}, nil, `validation error: required plugins "gpu,net" not present`},
		{"pod annotation", nil, map[string]string{validator.RequiredPluginsAnnotation: `["logger", "gpu"]`},
			`validation error: required plugin "gpu" not present`},
		{"pod annotation added to config", []string{"net"}, map[string]string{validator.RequiredPluginsAnnotation: "- gpu\n"},
			`validation error: required plugins "net,gpu" not present`},
		{"pod-scoped annotation", nil, map[string]string{validator.RequiredPluginsAnnotation + "/pod": `[gpu]`},
			`validation error: required plugin "gpu" not present`},
		{"container annotation overrides pod", nil, map[string]string{
			validator.RequiredPluginsAnnotation:                    `[gpu]`,
			validator.RequiredPluginsAnnotation + "/container.app": `[logger]`,
		}, ""},
		{"other container's annotation", nil, map[string]string{validator.RequiredPluginsAnnotation + "/container.db": `[gpu]`}, ""},
		{"invalid annotation", nil, map[string]string{validator.RequiredPluginsAnnotation: `gpu`},
			`validation error: invalid required-plugins.noderesource.dev annotation "gpu": not a list: "gpu"`},
		{"tolerated", []string{"gpu"}, map[string]string{tolerate: "true"}, ""},
		{"tolerated for container", []string{"gpu"}, map[string]string{tolerate + "/container.app": "true"}, ""},
		{"not tolerated", []string{"gpu"}, map[string]string{tolerate: "false"}, `validation error: required plugin "gpu" not present`},
		{"invalid toleration", []string{"gpu"}, map[string]string{tolerate: "maybe"},
			`validation error: invalid tolerate-missing.example.com annotation "maybe": strconv.ParseBool: parsing "maybe": invalid syntax`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validator.Config{Enable: true, RequiredPlugins: tc.required, TolerateMissingAnnotation: tolerate}
			check(t, cfg, request(t, pod(tc.annotations), container(nil), plugins...), tc.want)
		})
	}
	// Without a configured toleration key the annotation has no effect.
	cfg := validator.Config{Enable: true, RequiredPlugins: []string{"gpu"}}
	check(t, cfg, request(t, pod(map[string]string{tolerate: "true"}), container(nil), plugins...),
		`validation error: required plugin "gpu" not present`)
}

// The configuration is copied: changing the caller's slice later has no
// effect.
func TestConfigCopied(t *testing.T) {
	required := []string{"gpu"}
	v := validator.New(validator.Config{Enable: true, RequiredPlugins: required})
	required[0] = "10-a"
	err := v.Validate(context.Background(), request(t, pod(nil), container(nil), answer{"10-a", nil}))
	if err == nil || !strings.Contains(err.Error(), `"gpu"`) {
		t.Errorf("Validate = %v, want gpu missing", err)
	}
}

func TestRuleOrder(t *testing.T) {
	cfg := validator.Config{Enable: true, RejectOCIHookAdjustment: true, RejectUnconfinedSeccompAdjustment: true,
		RejectNamespaceAdjustment: true, RejectSysctlAdjustment: true, RequiredPlugins: []string{"gpu"}}
	all := func(a *api.ContainerAdjustment) {
		setSeccomp(a)
		a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network"})
		a.SetLinuxSysctl("k", "v")
	}
	steps := []struct {
		build func(a *api.ContainerAdjustment)
		want  string
	}{
		{func(a *api.ContainerAdjustment) { all(a); addHook(a) }, "OCI hook"},
		{all, "seccomp"},
		{func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network"})
			a.SetLinuxSysctl("k", "v")
		}, "namespace"},
		{func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("k", "v") }, "required plugin"},
	}
	for _, s := range steps {
		err := validator.New(cfg).Validate(context.Background(), request(t, pod(nil), container(nil), answer{"10-a", s.build}))
		if err == nil || !strings.Contains(err.Error(), s.want) {
			t.Errorf("Validate = %v, want the %s rule to reject first", err, s.want)
		}
	}
	cfg.RequiredPlugins = nil
	err := validator.New(cfg).Validate(context.Background(), request(t, pod(nil), container(nil), answer{"10-a", steps[3].build}))
	if err == nil || !strings.Contains(err.Error(), "sysctl") {
		t.Errorf("Validate = %v, want the sysctl rule to reject", err)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := validator.New(validator.Config{Enable: true}).Validate(ctx, &api.ValidateContainerAdjustmentRequest{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Validate with cancelled context = %v", err)
	}
}

func TestRequiredPluginsAnnotationKey(t *testing.T) {
	if validator.RequiredPluginsAnnotation != "required-plugins.noderesource.dev" {
		t.Errorf("RequiredPluginsAnnotation = %q", validator.RequiredPluginsAnnotation)
	}
}
