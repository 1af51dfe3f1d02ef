package hookinjector

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/plugins/internal/allow"
)

// HookRule allows hooks: an executable and the OCI hook stages it may run
// at. A hook file is injected only if one rule allows its hook's path at
// every stage the file names.
type HookRule struct {
	// Path is a pattern (path.Match: '*' does not cross '/') over the
	// hook's executable, an absolute path, such as /usr/bin/nvidia-ctk.
	Path string `yaml:"path"`
	// Stages are the stages (prestart, createRuntime, createContainer,
	// startContainer, poststart, poststop) the executable may run at;
	// at least one.
	Stages []string `yaml:"stages"`
}

// validate checks the rule.
func (r HookRule) validate() error {
	if !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("path %q is not an absolute path pattern", r.Path)
	}
	if err := allow.CheckPattern(r.Path); err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if len(r.Stages) == 0 {
		return fmt.Errorf("stages: none: name the stages %s may run at (%s)", r.Path, strings.Join(Stages(), ", "))
	}
	for _, s := range r.Stages {
		if !slices.Contains(Stages(), s) {
			return fmt.Errorf("stages: unknown stage %q (one of %s)", s, strings.Join(Stages(), ", "))
		}
	}
	return nil
}

// CheckHook returns why c does not allow the hook of a hook file, which
// runs the executable hookPath at stages, or "" if a rule allows it. A
// path that is not absolute and clean is refused: the rules compare
// strings.
func (c *Config) CheckHook(hookPath string, stages []string) string {
	if !path.IsAbs(hookPath) || path.Clean(hookPath) != hookPath {
		return fmt.Sprintf("the hook's path %s is not an absolute clean path", allow.Quote(hookPath))
	}
	pathAllowed := false
	for _, r := range c.Hooks {
		if ok, _ := path.Match(r.Path, hookPath); !ok {
			continue
		}
		pathAllowed = true
		if !slices.ContainsFunc(stages, func(s string) bool { return !slices.Contains(r.Stages, s) }) {
			return ""
		}
	}
	if !pathAllowed {
		return fmt.Sprintf("no rule of the plugin's hooks allows the executable %s", allow.Quote(hookPath))
	}
	return fmt.Sprintf("no rule of the plugin's hooks allows %s at every stage of [%s]", allow.Quote(hookPath), strings.Join(stages, ", "))
}
