package policy

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// MaxValueLength is the number of bytes of a refused value a Violation
// keeps: values come from plugins, and go into errors and logs.
const MaxValueLength = 160

// Violation is one change a plugin made that its grant does not allow.
type Violation struct {
	// Field is the kind of change: its String() is the stable field name
	// ("mounts", "linux.devices", "update.linux.resources.cpu"), the
	// label of the runtime's denied metric.
	Field capability.Capability
	// Value is the refused entry, rendered and quoted within
	// MaxValueLength bytes.
	Value string
	// Reason says which rule refuses it, such as "source \"/\" is not
	// under an allowed source".
	Reason string
	// Rule is where the deciding rule is, "policy.yaml:12:
	// grants[1].adjust.mounts", or the grant and the key it lacks,
	// "policy.yaml:7: grants[1] (no adjust.mounts)".
	Rule string
}

// String returns "FIELD VALUE denied: REASON (RULE)".
func (v Violation) String() string {
	return fmt.Sprintf("%s %s denied: %s (%s)", v.Field, v.Value, v.Reason, v.Rule)
}

// quote renders a value from a plugin quoted, cut to MaxValueLength bytes
// on a rune boundary with its full length noted if it is longer.
func quote(s string) string {
	if len(s) <= MaxValueLength {
		return strconv.Quote(s)
	}
	cut := MaxValueLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// DeniedError is a plugin's answer refused by its grant: the runtime
// treats it as the plugin's failure, under its failure policy.
type DeniedError struct {
	// Plugin is the plugin's IDX-NAME.
	Plugin string
	// Target names the container ("container NAME (ID) of pod
	// NAMESPACE/NAME").
	Target string
	// Violations are the refused changes, at least one.
	Violations []Violation
	// Action is the grant's: ActionDeny, the changes are refused;
	// ActionAudit, they are applied, and this error is only logged and
	// counted.
	Action Action
}

// maxListed is the number of violations DeniedError's message lists.
const maxListed = 4

// Error names the plugin, the container and the refused changes:
// "plugin 10-x: changes to container c (id) of pod ns/p denied by the
// policy: mounts {...} denied: ... (policy.yaml:7: ...); and 2 more".
func (e *DeniedError) Error() string {
	var b strings.Builder
	if e.Action == ActionAudit {
		fmt.Fprintf(&b, "plugin %s: changes to %s would be denied by the policy (audit): ", e.Plugin, e.Target)
	} else {
		fmt.Fprintf(&b, "plugin %s: changes to %s denied by the policy: ", e.Plugin, e.Target)
	}
	for i, v := range e.Violations {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(e.Violations)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Deny returns the DeniedError of plugin (IDX-NAME) for violations in a
// change of ctr (nil for a pod-level refusal) of pod, or nil if there
// are none.
func Deny(plugin string, pod *api.PodSandbox, ctr *api.Container, violations []Violation) error {
	if len(violations) == 0 {
		return nil
	}
	return denied(plugin, pod, ctr, violations)
}

// Deny returns the DeniedError of plugin (IDX-NAME) for violations of the
// grant in a change of ctr (nil for a pod-level refusal) of pod, with the
// grant's Action, or nil if there are none.
func (g *Grant) Deny(plugin string, pod *api.PodSandbox, ctr *api.Container, violations []Violation) *DeniedError {
	if len(violations) == 0 {
		return nil
	}
	e := denied(plugin, pod, ctr, violations)
	e.Action = g.Action()
	return e
}

// denied returns the DeniedError of plugin for violations in a change of
// ctr of pod.
func denied(plugin string, pod *api.PodSandbox, ctr *api.Container, violations []Violation) *DeniedError {
	target := fmt.Sprintf("pod %s/%s", pod.GetNamespace(), pod.GetName())
	if ctr != nil {
		target = fmt.Sprintf("container %s (%s) of %s", ctr.GetName(), ctr.GetId(), target)
	}
	return &DeniedError{Plugin: plugin, Target: target, Violations: violations}
}
