package scenario

import (
	"bytes"
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/policy"
)

// checkPolicy compiles the scenario's policy (a policy document under
// the key policy) with the policy engine, reporting its mistakes at their
// lines of the scenario file.
func (c *checker) checkPolicy() {
	n := &c.s.Policy
	if n.Kind == 0 {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.errorf(n.Line, "policy: a policy of plugin grants (required:, grants:, default:; docs/policy.md), "+
			"not the simulator's former policy rules")
		return
	}
	if k := key(c.root, "policy"); k != nil {
		c.s.PolicyLine = k.Line
	}
	// The policy's text starts at its line of the scenario file, so that
	// the lines of its mistakes and of its rules (which refusals cite)
	// are the scenario file's.
	text := append(bytes.Repeat([]byte{'\n'}, n.Line-1), c.nodeText(n)...)
	p, err := policy.Parse(c.s.File, text, policy.WithFilterOptions(filter.WithCEL(celscope.Compile)))
	if err == nil {
		c.s.CompiledPolicy = p
		return
	}
	var mistakes []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		mistakes = j.Unwrap()
	} else {
		mistakes = []error{err}
	}
	for _, m := range mistakes {
		var pe *policy.Error
		if errors.As(m, &pe) && pe.Line > 0 {
			c.errorf(pe.Line, "policy: %s", pe.Msg)
			continue
		}
		c.errorf(n.Line, "policy: %v", m)
	}
}

// nodeText returns the text of the block mapping n, a value of the root
// mapping, dedented, so that its line L is line n.Line-1+L of the file.
func (c *checker) nodeText(n *yaml.Node) []byte {
	lines := strings.Split(string(c.data), "\n")
	end := len(lines)
	// The next key of the root mapping ends the value.
	for i := 0; i+1 < len(c.root.Content); i += 2 {
		if k := c.root.Content[i]; k.Line > n.Line && k.Line-1 < end {
			end = k.Line - 1
		}
	}
	indent := n.Column - 1
	var b bytes.Buffer
	for i := n.Line - 1; i < end && i < len(lines); i++ {
		l := lines[i]
		if i == n.Line-1 {
			l = l[min(indent, len(l)):]
		} else {
			l = l[min(indent, len(l)-len(strings.TrimLeft(l, " "))):]
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
