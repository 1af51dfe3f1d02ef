// Package yamldoc decodes YAML documents written by people (scenarios,
// plugin configurations) strictly, with errors that say where the mistake
// is and which field it is about, in the document's terms instead of the
// Go types': "line 4: cannot unmarshal a string ("lots") into
// resources.cpuShares: want a non-negative integer", "line 2: unknown key
// "evnts" at the top level (did you mean "events"?)".
package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Error is one mistake in a document.
type Error struct {
	// Line is the 1-based line of the mistake, 0 if unknown.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error returns "line N: MSG", or MSG without a line.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Decode decodes data, one YAML document, into v: unknown keys are
// errors, and so is a second document. Mistakes are *Error values (joined
// with errors.Join if there are several). An empty document leaves v as
// it is.
func Decode(data []byte, v any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Explain(data, err, nil, nil)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return Explain(data, err, root.Content[0], v)
	}
	line, err := Rest(dec, data)
	if err == nil && line > 0 {
		err = &Error{Line: line, Msg: "more than one YAML document"}
	}
	return err
}

// Rest reads what follows the document dec just decoded from data: it
// returns 0 and nil at the end, the line of a second document, or the
// syntax error of text that is not YAML (explained as by Explain).
func Rest(dec *yaml.Decoder, data []byte) (line int, err error) {
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return 0, nil
	case err != nil:
		return 0, Explain(data, err, nil, nil)
	}
	return max(extra.Line, 1), nil
}

// Explain turns an error of yaml.v3 about data into *Error values (joined
// with errors.Join if there are several). For a syntax error it finds the
// line of the mistake (yaml.v3 names the line where the enclosing block
// starts); given the document's root node, a value of the wrong type and
// an unknown key are named by their paths (pods[0].labels), and given
// what the document was decoded into (v, or nil), an unknown key comes
// with the known key it was probably meant to be.
func Explain(data []byte, err error, root *yaml.Node, v any) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{syntaxLine(data, err).Error()}
	}
	var errs []error
	for _, m := range msgs {
		line, msg := split(m)
		e := &Error{Line: line, Msg: msg}
		if tm := typeMismatch(msg); tm != nil && line > 0 {
			e.Msg = tm.describe(fieldAt(root, line, tm))
		} else if sub := unknownField().FindStringSubmatch(msg); sub != nil {
			e.Msg = unknownKey(sub[1], line, root, v)
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// yamlLine matches the "line N: " prefix of yaml.v3's messages. The
// expressions are compiled when first needed (a message to rewrite), not
// when a program linking the package starts.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`) })

// split splits a yaml.v3 message into its line (0 if it names none) and
// the rest.
func split(m string) (line int, msg string) {
	msg = strings.TrimPrefix(m, "yaml: ")
	if sub := yamlLine().FindStringSubmatch(msg); sub != nil {
		line, _ = strconv.Atoi(sub[1])
		msg = sub[2]
	}
	return line, msg
}

// maxRefinedLines is the longest document whose syntax errors syntaxLine
// corrects; the documents this package is for are far shorter.
const maxRefinedLines = 2000

// syntaxLine corrects the line of a yaml.v3 syntax error: yaml.v3 names
// the line where the enclosing block starts (a bad indentation on line 4
// of a list item that starts on line 2 is reported at line 2), and no line
// at all for some mistakes. The first prefix of the document, in whole
// lines, that fails with the same message ends at the line of the
// mistake. If no prefix fails so, the line yaml.v3 gave stands, or, if it
// gave none, the last line: a mistake only the whole document shows.
func syntaxLine(data []byte, err error) error {
	reported, msg := split(err.Error())
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 1 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // after the final newline
	}
	if len(lines) <= maxRefinedLines { // every prefix is parsed: quadratic in the document's length
		for n := max(reported, 1); n <= len(lines); n++ {
			perr := parseAll(bytes.Join(lines[:n], nil))
			if perr == nil {
				continue
			}
			if _, pmsg := split(perr.Error()); pmsg == msg {
				if n == reported {
					return err
				}
				return fmt.Errorf("line %d: %s", n, msg)
			}
		}
	}
	if reported > 0 {
		return err
	}
	return fmt.Errorf("line %d: %s", max(len(lines), 1), msg)
}

// parseAll parses every document of data and returns the first error.
func parseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// mismatch is yaml.v3's message about a value of the wrong type:
// "cannot unmarshal !!str `lots` into uint64".
type mismatch struct {
	tag, value, goType string
}

// mismatchMsg matches yaml.v3's message about a value of the wrong type.
var mismatchMsg = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(?s)^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
})

// typeMismatch parses the message, or returns nil.
func typeMismatch(msg string) *mismatch {
	sub := mismatchMsg().FindStringSubmatch(msg)
	if sub == nil {
		return nil
	}
	return &mismatch{tag: sub[1], value: sub[2], goType: sub[3]}
}

// matches reports whether n is the value the message is about (yaml.v3
// shortens values longer than 10 bytes to their first 7 and "...").
func (m *mismatch) matches(n *yaml.Node) bool {
	if n.ShortTag() != m.tag {
		return false
	}
	if short, ok := strings.CutSuffix(m.value, "..."); ok && len(n.Value) > 10 {
		return strings.HasPrefix(n.Value, short)
	}
	return m.value == "" || n.Value == m.value
}

// describe says what is wrong in the document's terms, naming the field
// (a path such as containers[0].resources.cpuShares) if it is known:
// cannot unmarshal a string ("lots") into FIELD: want a non-negative
// integer.
func (m *mismatch) describe(field string) string {
	got := map[string]string{"!!str": "a string", "!!int": "an integer", "!!float": "a number",
		"!!bool": "true or false", "!!seq": "a list", "!!map": "a mapping", "!!null": "nothing"}[m.tag]
	if got == "" {
		got = m.tag
	}
	if m.value != "" {
		got += fmt.Sprintf(" (%q)", m.value)
	}
	if field != "" {
		got += " into " + field
	}
	return fmt.Sprintf("cannot unmarshal %s: want %s", got, goTypeName(m.goType))
}

// goTypeName names a Go type for a user.
func goTypeName(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "uint"):
		return "a non-negative integer"
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping (key: value)"
	}
	if _, name, ok := strings.Cut(t, "."); ok && !strings.ContainsAny(name, ".[]*") {
		return "a mapping (a " + strings.ToLower(name) + ")"
	}
	return t
}

// fieldAt returns the path of the first value at line that the message
// is about, such as pods[0].labels, or "" if there is none.
func fieldAt(root *yaml.Node, line int, m *mismatch) string {
	if root == nil {
		return ""
	}
	var walk func(n *yaml.Node, path string) string
	walk = func(n *yaml.Node, path string) string {
		if n.Line == line && path != "" && m.matches(n) {
			return path
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				if f := walk(n.Content[i+1], p); f != "" {
					return f
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if f := walk(c, fmt.Sprintf("%s[%d]", path, i)); f != "" {
					return f
				}
			}
		}
		return ""
	}
	return walk(root, "")
}

// unknownField matches yaml.v3's message about an unknown key, which names
// the Go type (see unknownKey).
var unknownField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^field (\S+) not found in type (.+)$`) })
