package scenario

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// podState and ctrState are the lifecycle states the step check tracks.
type (
	podState int
	ctrState int
)

const (
	podNone podState = iota
	podRunning
	podStopped
	podRemoved
)

const (
	ctrNone ctrState = iota
	ctrCreated
	ctrRunning
	ctrStopped
	ctrRemoved
)

func (c *checker) checkSteps(pods map[string]*Pod) {
	if len(c.s.Steps) == 0 {
		c.errorf(c.line("steps"), "no steps: a scenario needs at least one step (such as runPod)")
		return
	}
	podStates := map[*Pod]podState{}
	ctrStates := map[*Container]ctrState{}
	for i, st := range c.s.Steps {
		if st == nil {
			c.errorf(c.line("steps", i), "empty step")
			continue
		}
		st.Line = c.line("steps", i)
		if !c.resolveStep(st, pods) {
			continue
		}
		c.checkExpect(st, i)
		c.checkExpectRefused(st, i)
		if msg := transition(st, podStates, ctrStates, c.s.Containers); msg != "" {
			c.errorf(st.Line, "step %d (%s %s): %s", i+1, st.Action, st.Target(), msg)
		}
	}
}

// resolveStep sets the step's action and target; it reports errors and
// returns false for a step that cannot be resolved.
func (c *checker) resolveStep(st *Step, pods map[string]*Pod) bool {
	var actions []string
	for _, a := range Actions() {
		if st.targets()[a] != "" {
			actions = append(actions, string(a))
			st.Action = a
		}
	}
	switch len(actions) {
	case 0:
		names := make([]string, 0, len(Actions()))
		for _, a := range Actions() {
			names = append(names, string(a))
		}
		c.errorf(st.Line, "step without an action (one of %s)", strings.Join(names, ", "))
		return false
	case 1:
	default:
		c.errorf(st.Line, "step with several actions (%s): write one step each", strings.Join(actions, ", "))
		return false
	}
	if st.Resources != nil && st.Action != UpdateContainer {
		c.errorf(st.Line, "step %s: resources only go with updateContainer", st.Action)
		return false
	}
	if st.Action == UpdateContainer && st.Resources == nil {
		c.errorf(st.Line, "step updateContainer %s: no resources to update to", st.Target())
		return false
	}
	if st.Action.IsPodAction() {
		p, ok := pods[st.Target()]
		if !ok {
			c.errorf(st.Line, "step %s: unknown pod %q", st.Action, st.Target())
			return false
		}
		st.Pod = p
		return true
	}
	ctr, err := c.resolveContainer(st.Target())
	if err != nil {
		c.errorf(st.Line, "step %s: %v", st.Action, err)
		return false
	}
	st.Container, st.Pod = ctr, pods[ctr.Pod]
	return true
}

// checkExpect checks a step's expect: only container steps expected to
// succeed have a spec to check.
func (c *checker) checkExpect(st *Step, i int) {
	if st.Expect == nil {
		return
	}
	line := c.line("steps", i, "expect")
	switch {
	case st.Action.IsPodAction():
		c.errorf(line, "step %s: expect only goes with container steps", st.Action)
	case st.ExpectError != "":
		c.errorf(line, "step %s %s: expect and expectError exclude each other (a failed step leaves the spec as proposed)", st.Action, st.Target())
	case len(st.Expect.Env) == 0 && len(st.Expect.Annotations) == 0 && st.Expect.Resources == nil:
		c.errorf(line, "step %s %s: expect checks nothing (env: [KEY=VALUE], annotations: {key: value}, resources: {cpusetCpus: ...})", st.Action, st.Target())
	}
	for j, kv := range st.Expect.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			c.errorf(c.line("steps", i, "expect", "env", j), "step %s %s: expected environment entry %q is not KEY=VALUE", st.Action, st.Target(), kv)
		}
	}
}

// checkExpectRefused checks a step's expectRefused: plugin names (NAME
// or IDX-NAME), each once.
func (c *checker) checkExpectRefused(st *Step, i int) {
	seen := map[string]bool{}
	for j, p := range st.ExpectRefused {
		name := p
		if _, n, err := api.ParsePluginName(p); err == nil {
			name = n
		}
		switch {
		case api.CheckPluginName(name) != nil:
			c.errorf(c.line("steps", i, "expectRefused", j), "step %s %s: expectRefused: %q is not a plugin name (NAME or IDX-NAME)", st.Action, st.Target(), p)
		case seen[p]:
			c.errorf(c.line("steps", i, "expectRefused", j), "step %s %s: expectRefused names %q twice", st.Action, st.Target(), p)
		}
		seen[p] = true
	}
}

// transition applies the step to the tracked states; it returns why the
// step is impossible, or "". A step expected to fail changes nothing.
func transition(st *Step, pods map[*Pod]podState, ctrs map[*Container]ctrState, all []*Container) string {
	ps := pods[st.Pod]
	var next podState
	var nextCtr ctrState
	switch st.Action {
	case RunPod:
		if ps != podNone {
			return "the pod was already run (a scenario runs each pod once)"
		}
		next = podRunning
	case StopPod:
		if ps != podRunning {
			return "the pod is not running"
		}
		for _, ctr := range all {
			if ctr != nil && ctr.Pod == st.Pod.Name && (ctrs[ctr] == ctrCreated || ctrs[ctr] == ctrRunning) {
				return fmt.Sprintf("container %q is still %s: stop it first", ctr.Name, stateName(ctrs[ctr]))
			}
		}
		next = podStopped
	case RemovePod:
		if ps != podStopped {
			return "the pod is not stopped: stop it first"
		}
		for _, ctr := range all {
			if ctr != nil && ctr.Pod == st.Pod.Name && ctrs[ctr] != ctrNone && ctrs[ctr] != ctrRemoved {
				return fmt.Sprintf("container %q is not removed: remove it first", ctr.Name)
			}
		}
		next = podRemoved
	default:
		cs := ctrs[st.Container]
		switch st.Action {
		case CreateContainer:
			if ps != podRunning {
				return fmt.Sprintf("pod %q is not running", st.Pod.Name)
			}
			if cs != ctrNone {
				return "the container was already created (a scenario creates each container once)"
			}
			nextCtr = ctrCreated
		case StartContainer:
			if cs != ctrCreated {
				return fmt.Sprintf("the container is %s; only a created container can be started", stateName(cs))
			}
			nextCtr = ctrRunning
		case UpdateContainer:
			if cs != ctrCreated && cs != ctrRunning {
				return fmt.Sprintf("the container is %s", stateName(cs))
			}
			nextCtr = cs
		case StopContainer:
			if cs != ctrCreated && cs != ctrRunning {
				return fmt.Sprintf("the container is %s", stateName(cs))
			}
			nextCtr = ctrStopped
		case RemoveContainer:
			// A runtime removes a container that was created but never
			// started as it is; a running one must be stopped first.
			if cs != ctrStopped && cs != ctrCreated {
				if cs == ctrRunning {
					return "the container is running: stop it first"
				}
				return fmt.Sprintf("the container is %s", stateName(cs))
			}
			nextCtr = ctrRemoved
		}
		if st.ExpectError == "" {
			ctrs[st.Container] = nextCtr
		}
		return ""
	}
	if st.ExpectError == "" {
		pods[st.Pod] = next
	}
	return ""
}

func stateName(s ctrState) string {
	switch s {
	case ctrCreated:
		return "created"
	case ctrRunning:
		return "running"
	case ctrStopped:
		return "stopped"
	case ctrRemoved:
		return "removed"
	}
	return "not created"
}
