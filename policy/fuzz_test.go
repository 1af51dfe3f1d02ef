package policy

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/identity"
)

// FuzzParse checks that Parse never panics, that every mistake it
// reports is an *Error naming the file, and that a policy it accepts can
// be used: grants found and checks run.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/samples.yaml", "testdata/allow-all.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(benchPolicy))
	f.Add([]byte("default:\n  adjust:\n    mounts: {sources: [{path: /}]}\n"))
	f.Add([]byte("grants:\n  - plugins: [\"*\"]\n    where: {podLabelSelector: \"a in (b)\"}\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte("action: audit\ndefault:\n  action: deny\n  adjust:\n    hooks: [/x, {path: /y, args: [y, \"*\"], moreArgs: true, env: [\"A=*\"]}]\n    mounts: {remove: [/m], destinations: [\"/d/*\"]}\n    annotations: [cdi.k8s.io/nri]\n"))
	f.Add([]byte(identityPolicy))
	attack := &api.ContainerAdjustment{
		Mounts: []*api.Mount{{Source: "/", Destination: "/host", Type: "bind", Options: []string{"rbind", "rw"}},
			{Destination: "-/proc"}},
		Env:         []*api.KeyValue{{Key: "-PATH"}},
		Annotations: map[string]string{"cdi.k8s.io/nri": "vendor.com/disk=sda"},
		Hooks:       &api.Hooks{Prestart: []*api.Hook{{Path: "/y", Args: []string{"sh"}, Env: []string{"LD_PRELOAD=/x"}}}},
		Linux:       &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/sda", Type: "b", Major: 8}}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			for _, e := range unjoin(err) {
				var pe *Error
				if !errors.As(e, &pe) || !strings.HasPrefix(e.Error(), "fuzz.yaml") {
					t.Fatalf("mistake not an *Error of the file: %v", e)
				}
			}
			return
		}
		for _, id := range []*identity.Identity{realHooks, hostProc, unlocated, nil} {
			g, _ := p.GrantForIdentity("10", "hook-injector", id)
			_ = g.Summary()
		}
		_ = p.Warnings()
		g := p.GrantFor("10", "device-injector")
		g.CheckAdjustment(testPod, testCtr, attack)
		g.CheckUpdate(testPod, testCtr, &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: attack.GetLinux().GetResources()}})
		_ = g.Summary()
	})
}

// unjoin returns the errors joined in err, or err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
