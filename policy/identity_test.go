package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/identity"
)

// Identities of the tests: the hook-injector's DaemonSet pod, the same
// image in another namespace, a host process, one whose container could
// not be told, and a pre-installed plugin.
var (
	realHooks = &identity.Identity{Kind: identity.External,
		Process: &identity.Process{PID: 10, UID: 0, Exe: "/bin/hook-injector", Digest: "sha256:" + strings.Repeat("a", 64)},
		Container: &identity.Container{ID: "c1", Name: "plugin", Pod: identity.Pod{ID: "p1", Namespace: "kube-system", Name: "nri-plugin-hook-injector-x7k2p",
			Labels: map[string]string{"app.kubernetes.io/name": "nri-plugin-hook-injector", "pod-template-generation": "1"}}}}
	impostor = &identity.Identity{Kind: identity.External,
		Process: &identity.Process{PID: 11, UID: 0, Exe: "/bin/logger", Digest: "sha256:" + strings.Repeat("b", 64)},
		Container: &identity.Container{ID: "c2", Name: "plugin", Pod: identity.Pod{ID: "p2", Namespace: "kube-system", Name: "nri-plugin-logger-abcde",
			Labels: map[string]string{"app.kubernetes.io/name": "nri-plugin-logger"}}}}
	hostProc = &identity.Identity{Kind: identity.External,
		Process: &identity.Process{PID: 12, UID: 0, Exe: "/usr/local/bin/gpu-policy", Digest: "sha256:" + strings.Repeat("c", 64), Cgroup: "/system.slice/gpu-policy.service"}}
	unlocated    = &identity.Identity{Kind: identity.External, Process: hostProc.Process, Unlocated: "listing failed"}
	preinstalled = identity.Launched(identity.PreInstalled, "/opt/nri/plugins/30-hook-injector")
)

const identityPolicy = `version: 1
required:
  - plugin: gpu-policy
    identity:
      uids: [0]
      executables: ["sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"]
  - differ
grants:
  - plugins: [hook-injector]
    identity:
      namespaces: [kube-system]
      podLabelSelector: app.kubernetes.io/name=nri-plugin-hook-injector
      containerNames: [plugin]
    adjust:
      hooks: [/usr/bin/nvidia-ctk]
  - plugins: [logger]
    identity: any
  - plugins: [template]
    adjust:
      env: [NRI_TEMPLATE]
  - plugins: [gpu-policy]
    identity: {uids: [0]}
    adjust:
      env: [GPU_POLICY]
default:
  identity: {namespaces: [plugins-*]}
  adjust:
    annotations: [example.com/*]
`

// TestGrantForIdentity: the grant of each identity, and the refusals of
// names the policy binds to identities the plugin does not have.
func TestGrantForIdentity(t *testing.T) {
	p := mustParse(t, identityPolicy)
	inPlugins := &identity.Identity{Kind: identity.External, Process: impostor.Process,
		Container: &identity.Container{Name: "x", Pod: identity.Pod{Namespace: "plugins-a", Name: "p"}}}
	for _, tc := range []struct {
		name      string
		plugin    string
		id        *identity.Identity
		grant     string // the grant's String, "" for a refusal
		refusedBy string // what the refusal names
	}{
		{"the DaemonSet", "hook-injector", realHooks, "policy.yaml:9: grants[0]", ""},
		{"a pre-installed plugin meets every identity", "hook-injector", preinstalled, "policy.yaml:9: grants[0]", ""},
		{"another pod under its name", "hook-injector", impostor, "", `policy.yaml:9: grants[0] takes identity namespaces=["kube-system"] AND pod_label_selector="app.kubernetes.io/name=nri-plugin-hook-injector" AND container_names=["plugin"]`},
		{"a host process under its name", "hook-injector", hostProc, "", "grants[0] takes identity"},
		{"not located", "hook-injector", unlocated, "", "grants[0] takes identity"},
		{"unknown", "hook-injector", nil, "", "grants[0] takes identity"},
		{"identity: any", "logger", impostor, "policy.yaml:16: grants[1]", ""},
		{"a grant without identity, external", "template", realHooks, "", "policy.yaml:18: grants[2] takes launched plugins only (it has no identity)"},
		{"a grant without identity, pre-installed", "template", preinstalled, "policy.yaml:18: grants[2]", ""},
		// gpu-policy: its grant takes uid 0 in no container, its required
		// entry that executable too.
		{"the required host process", "gpu-policy", hostProc, "policy.yaml:21: grants[3]", ""},
		{"a root container under a required name", "gpu-policy", impostor, "", "grants[3] takes identity in_no_container AND uids=[0]; policy.yaml:3: required[0] gpu-policy takes identity in_no_container AND uids=[0] AND executables=[sha256:cccc"},
		{"a root host process with another executable", "gpu-policy", &identity.Identity{Kind: identity.External, Process: &identity.Process{UID: 0, Digest: "sha256:" + strings.Repeat("d", 64)}},
			"", "required[0] gpu-policy takes identity in_no_container AND uids=[0] AND executables=[sha256:cccc"},
		// differ: required by name alone (launched plugins only), no grant.
		{"an external plugin under a required launched plugin's name", "differ", realHooks, "", "policy.yaml:7: required[1] differ takes launched plugins only"},
		{"the launched required plugin", "differ", preinstalled, "policy.yaml:25: default", ""},
		// Names no grant names: the default's identity decides.
		{"the default's identity", "other", inPlugins, "policy.yaml:25: default", ""},
		{"not the default's identity", "other", impostor, "policy.yaml: no grant for the plugin's identity", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := p.GrantForIdentity("30", tc.plugin, tc.id)
			if tc.refusedBy == "" {
				if err != nil || g.String() != tc.grant {
					t.Errorf("grant %s, %v; want %s", g, err, tc.grant)
				}
				return
			}
			var ie *IdentityError
			if !errors.As(err, &ie) || ie.Plugin != "30-"+tc.plugin || ie.Identity != tc.id || !strings.Contains(err.Error(), tc.refusedBy) {
				t.Fatalf("error %v, want an IdentityError naming %q", err, tc.refusedBy)
			}
			if !g.Capabilities().Empty() || g.String() != "policy.yaml: no grant for the plugin's identity" {
				t.Errorf("a refused plugin's grant: %s allows %s", g, g.Capabilities())
			}
			if !strings.Contains(err.Error(), "this plugin is "+tc.id.String()) {
				t.Errorf("the refusal does not say who the plugin is: %v", err)
			}
		})
	}
	// GrantFor is the launched plugin's grant.
	if g := p.GrantFor("30", "template"); g.String() != "policy.yaml:18: grants[2]" {
		t.Errorf("GrantFor(template) = %s", g)
	}
	var none *Policy
	if g, err := none.GrantForIdentity("30", "x", impostor); g != nil || err != nil {
		t.Errorf("no policy: %v, %v", g, err)
	}
}

// TestIdentityFallThrough: an identity that does not meet the first
// grant of its name gets the first later one it meets.
func TestIdentityFallThrough(t *testing.T) {
	p := mustParse(t, `grants:
  - plugins: [gpu-env]
    identity: {namespaces: [kube-system]}
    adjust: {env: [A]}
  - plugins: ["gpu-*"]
    identity: {namespaces: [gpu-workloads]}
    adjust: {env: [B]}
`)
	other := &identity.Identity{Kind: identity.External, Process: impostor.Process,
		Container: &identity.Container{Name: "c", Pod: identity.Pod{Namespace: "gpu-workloads", Name: "p"}}}
	if g, err := p.GrantForIdentity("50", "gpu-env", other); err != nil || g.String() != "policy.yaml:5: grants[1]" {
		t.Errorf("grant %s, %v; want grants[1]", g, err)
	}
	if g, err := p.GrantForIdentity("50", "gpu-env", realHooks); err != nil || g.String() != "policy.yaml:2: grants[0]" {
		t.Errorf("grant %s, %v; want grants[0]", g, err)
	}
	if _, err := p.GrantForIdentity("50", "gpu-env", hostProc); err == nil || !strings.Contains(err.Error(), "grants[0] takes identity namespaces=[\"kube-system\"]; policy.yaml:5: grants[1] takes") {
		t.Errorf("a process meeting neither: %v", err)
	}
}

// TestIdentityParse: the forms of identity and of required entries, and
// their mistakes at their lines.
func TestIdentityParse(t *testing.T) {
	p := mustParse(t, identityPolicy)
	got := []string{}
	for _, g := range p.Grants() {
		got = append(got, g.Identity())
	}
	want := []string{
		`namespaces=["kube-system"] AND pod_label_selector="app.kubernetes.io/name=nri-plugin-hook-injector" AND container_names=["plugin"]`,
		"any", "launched", "in_no_container AND uids=[0]", `namespaces=["plugins-*"]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("identities:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if req := p.Required(); strings.Join(req, ",") != "gpu-policy,differ" {
		t.Errorf("Required() = %v", req)
	}
	if req := strings.Join(p.RequiredSummary(), "; "); req != "gpu-policy identity=in_no_container AND uids=[0] AND executables=[sha256:"+strings.Repeat("c", 64)+"]; differ identity=launched" {
		t.Errorf("RequiredSummary() = %s", req)
	}
	if s := p.Grants()[1].Summary(); s != "policy.yaml:16: grants[1] plugins=logger identity=any where=all allows=none" {
		t.Errorf("Summary: %s", s)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown key":        {"grants:\n  - plugins: [x]\n    identity:\n      namespace: [a]\n", `policy.yaml:4: unknown key "namespace" in grants[0].identity (did you mean "namespaces"?)`},
		"not any":            {"grants:\n  - plugins: [x]\n    identity: anyone\n", `policy.yaml:3: identity "anyone": want any, or a mapping of namespaces, podLabelSelector, containerNames, uids, executables`},
		"a list":             {"grants:\n  - plugins: [x]\n    identity: [any]\n", `policy.yaml:3: identity "": want any`},
		"empty":              {"grants:\n  - plugins: [x]\n    identity: {}\n", "policy.yaml:3: grants[0].identity: an empty identity"},
		"bad selector":       {"grants:\n  - plugins: [x]\n    identity: {podLabelSelector: \"a in (\"}\n", "policy.yaml:3: grants[0].identity: "},
		"bad namespace glob": {"default:\n  identity:\n    namespaces: [\"[\"]\n", "policy.yaml:2: default.identity: "},
		"bad digest":         {"grants:\n  - plugins: [x]\n    identity:\n      executables: [sha256:abc]\n", `policy.yaml:4: grants[0].identity.executables[0]: executable digest "sha256:abc"`},
		"negative uid":       {"grants:\n  - plugins: [x]\n    identity: {uids: [-1]}\n", "policy.yaml:3: cannot unmarshal"},
		"required key":       {"required:\n  - plugin: x\n    identities: any\n", `policy.yaml:3: unknown key "identities" in required`},
		"required name":      {"required:\n  - plugin: \"bad name\"\n    identity: any\n", "policy.yaml:2: required[0]: "},
		"required list":      {"required:\n  - [x]\n", "policy.yaml:2: a required plugin: want its name, or a mapping of plugin and identity"},
		"required identity":  {"required:\n  - plugin: x\n    identity: {uids: []}\n", "policy.yaml:3: required[0].identity: an empty identity"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("policy.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestIdentityWarnings: every grant and required entry that takes any
// process is warned about, at its line.
func TestIdentityWarnings(t *testing.T) {
	p := mustParse(t, identityPolicy)
	ws := p.Warnings()
	if len(ws) != 1 || ws[0].Error() != "policy.yaml:17: grants[1].identity: any process that can reach the runtime's socket may register as logger and get this grant (and keep the plugin you mean out): bind it to the plugin's identity (docs/policy.md, Identity)" {
		t.Errorf("warnings: %v", ws)
	}
	p = mustParse(t, "required:\n  - {plugin: v, identity: any}\ndefault:\n  identity: any\n")
	var msgs []string
	for _, w := range p.Warnings() {
		msgs = append(msgs, w.Error())
	}
	want := "policy.yaml:4: default.identity: any process that can reach the runtime's socket gets the default grant under a name no grant names\n" +
		"policy.yaml:2: required[0].identity: any process that can reach the runtime's socket may register as v and count as the required plugin: bind it to the plugin's identity (docs/policy.md, Identity)"
	if got := strings.Join(msgs, "\n"); got != want {
		t.Errorf("warnings:\n%s\nwant\n%s", got, want)
	}
	if mustParse(t, "").Warnings() != nil {
		t.Error("an empty policy has warnings")
	}
}
