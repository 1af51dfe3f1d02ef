package hookinjector

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestAllowlist: only the hooks a rule of the configuration's hooks
// allows, by executable and by every stage, are injected; without a
// configuration none is, and each skipped file is logged with the reason.
func TestAllowlist(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "10-ctk.json", hook("/usr/bin/nvidia-ctk", `{"always": true}`, "createContainer"))
	writeHook(t, dir, "20-shell.json", hook("/bin/sh", `{"always": true}`, "createRuntime"))
	writeHook(t, dir, "30-ctk-late.json", hook("/usr/bin/nvidia-ctk", `{"always": true}`, "createContainer", "poststop"))
	writeHook(t, dir, "40-unclean.json", hook("/usr/bin/../../bin/sh", `{"always": true}`, "createContainer"))
	ctr := &api.Container{Name: "c", Args: []string{"sh"}}

	for name, tc := range map[string]struct {
		config   string
		want     []string // the paths injected at createContainer, then createRuntime
		poststop int      // the hooks injected at poststop
		logs     []string
	}{
		"no configuration": {
			config: "hooksDirs: [" + dir + "]\n",
			logs: []string{`hook=` + dir + `/20-shell.json path="\"/bin/sh\"" stages=[createRuntime] reason="no rule of the plugin's hooks allows the executable \"/bin/sh\""`,
				"skipped=4"},
		},
		"the executable at one stage": {
			config: "hooksDirs: [" + dir + "]\nhooks: [{path: /usr/bin/nvidia-ctk, stages: [createContainer]}]\n",
			want:   []string{"/usr/bin/nvidia-ctk"},
			logs: []string{`30-ctk-late.json path="\"/usr/bin/nvidia-ctk\"" stages="[createContainer poststop]" reason="no rule of the plugin's hooks allows \"/usr/bin/nvidia-ctk\" at every stage of [createContainer, poststop]"`,
				`reason="the hook's path \"/usr/bin/../../bin/sh\" is not an absolute clean path"`, "skipped=3"},
		},
		"a pattern, every stage it needs": {
			config:   "hooksDirs: [" + dir + "]\nhooks:\n  - {path: '/usr/bin/*', stages: [createContainer, poststop]}\n  - {path: /bin/sh, stages: [createRuntime]}\n",
			want:     []string{"/usr/bin/nvidia-ctk", "/usr/bin/nvidia-ctk", "/bin/sh"},
			poststop: 1,
			logs:     []string{"skipped=1"},
		},
		"a stage it does not name": {
			config: "hooksDirs: [" + dir + "]\nhooks: [{path: /bin/sh, stages: [prestart]}]\n",
			logs:   []string{"skipped=4"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			p := New(slog.New(slog.NewTextHandler(&logs, nil)), nil)
			if _, err := p.Configure(context.Background(), tc.config, "rt", "1"); err != nil {
				t.Fatal(err)
			}
			adj, _, err := p.CreateContainer(context.Background(), &api.PodSandbox{Name: "p"}, ctr)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range append(adj.GetHooks().GetCreateContainer(), adj.GetHooks().GetCreateRuntime()...) {
				got = append(got, h.GetPath())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("injected %q, want %q", got, tc.want)
			}
			if len(tc.want) == 0 && adj != nil {
				t.Errorf("adjustment %v, want none", adj)
			}
			if n := len(adj.GetHooks().GetPoststop()); n != tc.poststop {
				t.Errorf("%d poststop hooks, want %d", n, tc.poststop)
			}
			for _, want := range tc.logs {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("log lacks %s:\n%s", want, logs.String())
				}
			}
		})
	}
}

// TestParseConfigHookRules: each rule is checked when the configuration
// is read, naming the rule.
func TestParseConfigHookRules(t *testing.T) {
	c, err := ParseConfig("hooks:\n  - {path: '/usr/libexec/oci/hooks.d/*', stages: [prestart, poststop]}\n")
	if err != nil || len(c.Hooks) != 1 || c.Hooks[0].Stages[1] != "poststop" {
		t.Fatalf("decoded %+v, %v", c, err)
	}
	for name, tc := range map[string]struct{ config, want string }{
		"relative path": {"hooks: [{path: 'bin/*', stages: [prestart]}]\n", `hooks[0]: path "bin/*" is not an absolute path pattern`},
		"bad pattern":   {"hooks: [{path: '/bin/[', stages: [prestart]}]\n", "hooks[0]: path: pattern"},
		"no stages":     {"hooks: [{path: /bin/true}]\n", "hooks[0]: stages: none"},
		"unknown stage": {"hooks: [{path: /bin/true, stages: [prestop]}]\n", `hooks[0]: stages: unknown stage "prestop"`},
		"unknown key":   {"hooks: [{path: /bin/true, stages: [prestart], args: [x]}]\n", `unknown key "args"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig(tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "invalid hook-injector configuration: ") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
