package policy

// Action is what a runtime does with a change a grant does not allow
// (docs/policy.md, "Audit mode"): refuse it (ActionDeny, the default),
// or log and count it and apply it (ActionAudit), to roll a policy out,
// as Kubernetes' ValidatingAdmissionPolicy's Audit action.
type Action uint8

const (
	// ActionDeny refuses the change: the plugin's answer fails (see
	// DeniedError).
	ActionDeny Action = iota
	// ActionAudit applies the change; the runtime logs it and counts it.
	ActionAudit
)

// String returns the action as the policy file writes it: "deny" or
// "audit".
func (a Action) String() string {
	if a == ActionAudit {
		return "audit"
	}
	return "deny"
}

// parseAction returns the action of its name in a policy file, def for
// "".
func parseAction(s string, def Action) (Action, bool) {
	switch s {
	case "":
		return def, true
	case "deny":
		return ActionDeny, true
	case "audit":
		return ActionAudit, true
	}
	return def, false
}

// Action returns what the runtime does with a change the grant does not
// allow: its action, else the policy's. The nil grant allows everything
// (ActionDeny, for nothing).
func (g *Grant) Action() Action {
	if g == nil {
		return ActionDeny
	}
	return g.action
}
