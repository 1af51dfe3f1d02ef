package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a mistake in a scenario file, at a line (0 if unknown).
type Error struct {
	// File is the scenario's file name.
	File string
	// Line is the line of the offending definition, 1-based.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error formats the error as "file:line: msg".
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads and checks the scenario file at path.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s.Dir = dir
	return s, nil
}

// Parse decodes and checks a scenario; file names it in errors. The
// result's Dir is empty: relative plugin paths resolve against the
// current directory.
func Parse(file string, data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(file, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &Error{File: file, Msg: "empty scenario"}
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Content[0].Line, Msg: "a scenario is a mapping (name:, pods:, containers:, steps:, ...)"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	s := &Scenario{}
	if err := dec.Decode(s); err != nil {
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Line: extra.Line, Msg: "a scenario file holds one YAML document"}
	}
	s.File = file
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	c := &checker{s: s, root: root.Content[0]}
	c.check()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return s, nil
}

// Errorf returns an *Error at line of the scenario's file, for mistakes
// found by users of the scenario (such as an unknown sample plugin).
func (s *Scenario) Errorf(line int, format string, args ...any) error {
	return &Error{File: s.File, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// yamlLine matches the "line N: " prefix of yaml.v3's messages.
func yamlLine() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`) }

// yamlError turns a yaml.v3 error into *Error values with lines.
func yamlError(file string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	re := yamlLine()
	var errs []error
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		e := &Error{File: file, Msg: m}
		if sub := re.FindStringSubmatch(m); sub != nil {
			e.Line, _ = strconv.Atoi(sub[1])
			e.Msg = friendlier(sub[2])
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// friendlier rewrites yaml.v3's unknown-field message, which names Go
// types, in the scenario's terms.
func friendlier(msg string) string {
	re := regexp.MustCompile(`^field (\S+) not found in type \*?scenario\.(\w+)$`)
	if sub := re.FindStringSubmatch(msg); sub != nil {
		return fmt.Sprintf("unknown key %q in %s", sub[1], strings.ToLower(sub[2]))
	}
	return msg
}

// node returns the YAML node at path below n: string elements are
// mapping keys, int elements sequence indexes. It returns nil if there is
// no such node.
func node(n *yaml.Node, path ...any) *yaml.Node {
	for _, p := range path {
		if n == nil {
			return nil
		}
		switch p := p.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return nil
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
				}
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || p >= len(n.Content) {
				return nil
			}
			n = n.Content[p]
		}
	}
	return n
}
