package policy

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// hooks returns an adjustment of one createContainer hook.
func hooks(path string, args []string, env ...string) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Hooks: &api.Hooks{CreateContainer: []*api.Hook{{Path: path, Args: args, Env: env}}}}
}

// TestRouteHooks: a grant constrains a hook's arguments and environment;
// a hook named by its path alone may carry no argument but its name and
// no environment (route "hooks").
func TestRouteHooks(t *testing.T) {
	g := mustParse(t, `
default:
  adjust:
    hooks:
      - /usr/bin/plain
      - path: /usr/bin/nvidia-ctk
        args: [nvidia-ctk, hook, "*"]
        moreArgs: true
      - path: /usr/libexec/oci/hooks.d/exact
        args: [exact, --verbose]
        env: ["PATH=/usr/bin:/bin", "DEBUG=*"]
      - path: /opt/any
        moreArgs: true
`).GrantFor("10", "x")
	checkCases(t, g, []ruleCase{
		{"no arguments", hooks("/usr/bin/plain", nil), ""},
		{"its name", hooks("/usr/bin/plain", []string{"plain"}), ""},
		{"its path", hooks("/usr/bin/plain", []string{"/usr/bin/plain"}), ""},
		{"another name", hooks("/usr/bin/plain", []string{"sh"}), "hooks: argument"},
		{"an argument", hooks("/usr/bin/plain", []string{"plain", "-c"}), "hooks: argument"},
		{"LD_PRELOAD", hooks("/usr/bin/plain", nil, "LD_PRELOAD=/tmp/x.so"), "hooks: environment"},
		{"a subcommand with its arguments", hooks("/usr/bin/nvidia-ctk", []string{"nvidia-ctk", "hook", "update-ldcache", "--folder", "/usr/lib64"}), ""},
		{"another command", hooks("/usr/bin/nvidia-ctk", []string{"nvidia-ctk", "config", "--in-place"}), "hooks: argument"},
		{"too few", hooks("/usr/bin/nvidia-ctk", []string{"nvidia-ctk", "hook"}), "hooks: argument"},
		{"exact", hooks("/usr/libexec/oci/hooks.d/exact", []string{"exact", "--verbose"}, "PATH=/usr/bin:/bin", "DEBUG=1"), ""},
		{"exact, one more", hooks("/usr/libexec/oci/hooks.d/exact", []string{"exact", "--verbose", "x"}), "hooks: argument"},
		{"another PATH", hooks("/usr/libexec/oci/hooks.d/exact", []string{"exact", "--verbose"}, "PATH=/tmp"), "hooks: environment"},
		{"any arguments", hooks("/opt/any", []string{"x", "-c", "anything"}), ""},
		{"any arguments, no environment", hooks("/opt/any", nil, "LD_PRELOAD=/x"), "hooks: environment"},
	})
	if _, err := Parse("policy.yaml", []byte("default:\n  adjust:\n    hooks:\n      - {path: /x, argz: [a]}\n")); err == nil ||
		!strings.Contains(err.Error(), `policy.yaml:4: unknown key "argz"`) {
		t.Errorf("a hook rule with an unknown key: %v", err)
	}
}
