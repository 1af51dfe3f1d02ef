package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/internal/yamldoc"
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
		return nil, fmt.Errorf("reading the scenario: %w", err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("reading the scenario: %w", err)
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
		return nil, yamlError(file, data, err, nil, nil)
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
		return nil, yamlError(file, data, err, root.Content[0], s)
	}
	switch line, err := yamldoc.Rest(dec, data); {
	case err != nil:
		return nil, fileErrors(file, err)
	case line > 0:
		return nil, &Error{File: file, Line: line, Msg: "a scenario file holds one YAML document"}
	}
	s.File = file
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	c := &checker{s: s, root: root.Content[0], data: data}
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

// yamlError turns a yaml.v3 error about data into *Error values with
// lines (see yamldoc.Explain); with the document's root node and the
// scenario decoded into, a value of the wrong type names its field and an
// unknown key its place and the key it was probably meant to be.
func yamlError(file string, data []byte, err error, root *yaml.Node, s *Scenario) error {
	var v any
	if s != nil {
		v = s
	}
	return fileErrors(file, yamldoc.Explain(data, err, root, v))
}

// fileErrors turns yamldoc's errors into *Error values of file.
func fileErrors(file string, err error) error {
	var errs []error
	for _, e := range unjoin(err) {
		var de *yamldoc.Error
		if errors.As(e, &de) {
			errs = append(errs, &Error{File: file, Line: de.Line, Msg: de.Msg})
		} else {
			errs = append(errs, &Error{File: file, Msg: e.Error()})
		}
	}
	return errors.Join(errs...)
}

// unjoin returns the errors joined in err (err itself if it is not a
// join).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// key returns the key node name of the mapping n, or nil.
func key(n *yaml.Node, name string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return nil
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
