package validator

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseList parses the YAML sequence of strings in an annotation value:
// a flow sequence (`[a, "b", 'c']`, which includes JSON arrays) or a block
// sequence (lines of `- item`). An empty value is an empty list. Anything
// else is rejected; a sequence that holds collections with the line of the
// offending item.
func parseList(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return nil, fmt.Errorf("parse YAML list: %w", err)
	}
	seq := &doc
	if seq.Kind == yaml.DocumentNode && len(seq.Content) == 1 {
		seq = seq.Content[0]
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("not a list: %q", strings.TrimSpace(value))
	}
	// Each item's text is taken as written (after unquoting): decoding into
	// []string would drop null items and `~` would become "".
	items := make([]string, 0, len(seq.Content))
	for _, item := range seq.Content {
		if item.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: nested collections are not supported", item.Line)
		}
		items = append(items, item.Value)
	}
	return items, nil
}

// ParsePluginList parses the value of a [RequiredPluginsAnnotation] as
// the default validator does: a YAML (or JSON) list of plugin names. A
// runtime that gates pods on required plugins reads the annotation with
// it, so that both agree on what a pod asks for.
func ParsePluginList(value string) ([]string, error) { return parseList(value) }
