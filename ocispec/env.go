package ocispec

import (
	"fmt"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// envName returns the name of a "NAME=value" environment entry.
func envName(kv string) string {
	name, _, _ := strings.Cut(kv, "=")
	return name
}

// envOp is the final change to one variable: set to value, or remove.
type envOp struct {
	value  string
	remove bool
}

// planEnv sets, replaces in place and removes (by "-NAME") environment
// variables. New variables are appended in the order they first appear in
// the adjustment; the last entry for a name wins.
func planEnv(env []*api.KeyValue) (step, error) {
	if len(env) == 0 {
		return nil, nil
	}
	ops := map[string]envOp{}
	var order []string
	for i, e := range env {
		name, marked := e.IsMarkedForRemoval()
		if name == "" || strings.Contains(name, "=") {
			return nil, invalidf(fmt.Sprintf("env[%d]", i), "bad variable name %q", e.GetKey())
		}
		if _, seen := ops[name]; !seen {
			order = append(order, name)
		}
		ops[name] = envOp{value: e.GetValue(), remove: marked}
	}
	return func(s *rspec.Spec) error {
		var old []string
		if s.Process != nil {
			old = s.Process.Env
		}
		out := make([]string, 0, len(old)+len(order))
		done := map[string]bool{}
		for _, kv := range old {
			name := envName(kv)
			op, ok := ops[name]
			switch {
			case !ok:
				out = append(out, kv)
			case done[name] || op.remove:
				done[name] = true
			default:
				done[name] = true
				out = append(out, name+"="+op.value)
			}
		}
		for _, name := range order {
			if op := ops[name]; !done[name] && !op.remove {
				out = append(out, name+"="+op.value)
			}
		}
		if len(out) == 0 {
			if s.Process != nil {
				s.Process.Env = nil
			}
			return nil
		}
		ensureProcess(s).Env = slices.Clip(out)
		return nil
	}, nil
}

// planArgs replaces the process arguments, if args is not empty.
func planArgs(args []string) (step, error) {
	if len(args) == 0 {
		return nil, nil
	}
	args = slices.Clone(args)
	return func(s *rspec.Spec) error {
		ensureProcess(s).Args = args
		return nil
	}, nil
}
