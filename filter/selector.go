package filter

import (
	"fmt"
	"slices"
	"strings"
)

// Selector is a parsed Kubernetes label selector: a conjunction of
// requirements on labels. It is immutable and safe for concurrent use.
type Selector struct {
	text string
	reqs []requirement
}

// selOp is the operator of one requirement.
type selOp uint8

const (
	opEquals    selOp = iota // k=v, k==v
	opNotEquals              // k!=v
	opIn                     // k in (a,b)
	opNotIn                  // k notin (a,b)
	opExists                 // k
	opNotExists              // !k
)

// requirement is one comma-separated term of a selector.
type requirement struct {
	key    string
	op     selOp
	values []string // one for opEquals/opNotEquals, at least one for opIn/opNotIn
}

// SelectorError is a syntax or validation error in a label selector.
type SelectorError struct {
	// Selector is the text that failed to parse.
	Selector string
	// Offset is the byte offset of the problem in Selector.
	Offset int
	// Msg describes the problem.
	Msg string
}

// Error implements error; it gives the position as a 1-based column.
func (e *SelectorError) Error() string {
	return fmt.Sprintf("label selector %q: column %d: %s", e.Selector, e.Offset+1, e.Msg)
}

// ParseSelector parses a label selector in the Kubernetes syntax:
// comma-separated requirements, all of which must hold, each one of
//
//	key=value   key==value   the label is set to value
//	key!=value               the label is not set, or set to another value
//	key in (v1,v2)           the label is set to one of the values
//	key notin (v1,v2)        the label is not set, or set to none of the values
//	key                      the label is set
//	!key                     the label is not set
//
// Keys are Kubernetes qualified names ([prefix/]name: name at most 63
// characters of [A-Za-z0-9-_.] starting and ending alphanumerically, prefix a
// DNS subdomain of at most 253 characters); values are at most 63 such
// characters and may be empty ("key=" requires an empty value). Whitespace
// around tokens is ignored. An empty selector matches everything. The
// set-based operators '<' and '>' of node selectors are not supported, and
// a NUL byte is an error (Kubernetes' parser stops reading at it, so it
// would take "a=b\x00c" for "a=b"). Otherwise ParseSelector accepts what
// k8s.io/apimachinery's labels.Parse accepts, with the same meaning: the
// interop module's FuzzAgainstKubernetes (interop/labelselector) checks it.
func ParseSelector(text string) (*Selector, error) {
	p := selParser{lex: selLexer{src: text}}
	p.next()
	sel := &Selector{text: strings.TrimSpace(text)}
	if p.tok.kind == tEOF {
		return sel, nil
	}
	for {
		r, err := p.requirement()
		if err != nil {
			return nil, err
		}
		sel.reqs = append(sel.reqs, r)
		switch p.tok.kind {
		case tEOF:
			return sel, nil
		case tComma:
			p.next()
		default:
			return nil, p.errorf(p.tok.pos, "unexpected %s after requirement on %q; expected ',' or end of selector", p.tok.describe(), r.key)
		}
	}
}

// Matches reports whether labels satisfy all requirements. It does not
// allocate.
func (s *Selector) Matches(labels map[string]string) bool {
	for i := range s.reqs {
		if !s.reqs[i].matches(labels) {
			return false
		}
	}
	return true
}

// Empty reports whether the selector has no requirements and so matches
// everything.
func (s *Selector) Empty() bool { return len(s.reqs) == 0 }

// String returns the selector's text, without surrounding whitespace.
func (s *Selector) String() string { return s.text }

func (r *requirement) matches(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case opEquals:
		return ok && v == r.values[0]
	case opNotEquals:
		return !ok || v != r.values[0]
	case opIn:
		return ok && slices.Contains(r.values, v)
	case opNotIn:
		return !ok || !slices.Contains(r.values, v)
	case opExists:
		return ok
	default: // opNotExists
		return !ok
	}
}

// selParser is a recursive-descent parser over selLexer's tokens.
type selParser struct {
	lex selLexer
	tok selToken
}

func (p *selParser) next() { p.tok = p.lex.next() }

func (p *selParser) errorf(pos int, format string, args ...any) error {
	return &SelectorError{Selector: p.lex.src, Offset: pos, Msg: fmt.Sprintf(format, args...)}
}

// requirement parses: '!' KEY | KEY [ op VALUE | ('in'|'notin') '(' values ')' ].
func (p *selParser) requirement() (requirement, error) {
	var r requirement
	negated := false
	if p.tok.kind == tBang {
		negated = true
		p.next()
	}
	if p.tok.kind != tIdent {
		return r, p.errorf(p.tok.pos, "unexpected %s; expected a label key", p.tok.describe())
	}
	if msg := checkQualifiedName(p.tok.text); msg != "" {
		return r, p.errorf(p.tok.pos, "invalid label key %q: %s", p.tok.text, msg)
	}
	r.key = p.tok.text
	p.next()
	if negated {
		r.op = opNotExists
		return r, nil
	}
	switch p.tok.kind {
	case tEOF, tComma:
		r.op = opExists
		return r, nil
	case tEq, tEqEq, tNotEq:
		r.op = opEquals
		if p.tok.kind == tNotEq {
			r.op = opNotEquals
		}
		p.next()
		v, err := p.value(true)
		if err != nil {
			return r, err
		}
		r.values = []string{v}
		return r, nil
	case tIdent:
		switch p.tok.text {
		case "in":
			r.op = opIn
		case "notin":
			r.op = opNotIn
		default:
			return r, p.errorf(p.tok.pos, "unexpected %s after label key %q; expected an operator (=, ==, !=, in, notin), ',' or end of selector", p.tok.describe(), r.key)
		}
		p.next()
		vs, err := p.valueSet()
		if err != nil {
			return r, err
		}
		r.values = vs
		return r, nil
	case tLess, tGreater:
		return r, p.errorf(p.tok.pos, "operator %q is not supported in pod label selectors", p.tok.text)
	default:
		return r, p.errorf(p.tok.pos, "unexpected %s after label key %q; expected an operator (=, ==, !=, in, notin), ',' or end of selector", p.tok.describe(), r.key)
	}
}

// value parses an optional label value; with emptyOK an absent value
// (the next token is ',' or the end) stands for the empty value.
func (p *selParser) value(emptyOK bool) (string, error) {
	switch {
	case p.tok.kind == tIdent:
		v := p.tok.text
		if msg := checkLabelValue(v); msg != "" {
			return "", p.errorf(p.tok.pos, "invalid label value %q: %s", v, msg)
		}
		p.next()
		return v, nil
	case emptyOK && (p.tok.kind == tEOF || p.tok.kind == tComma):
		return "", nil
	default:
		return "", p.errorf(p.tok.pos, "unexpected %s; expected a label value", p.tok.describe())
	}
}

// valueSet parses '(' [VALUE] {',' [VALUE]} ')'; an omitted value is the
// empty value, so "()" is the set holding "".
func (p *selParser) valueSet() ([]string, error) {
	if p.tok.kind != tOpen {
		return nil, p.errorf(p.tok.pos, "unexpected %s; expected '(' starting a set of values", p.tok.describe())
	}
	p.next()
	var vs []string
	for {
		v := ""
		if p.tok.kind == tIdent {
			var err error
			if v, err = p.value(false); err != nil {
				return nil, err
			}
		}
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
		switch p.tok.kind {
		case tComma:
			p.next()
		case tClose:
			p.next()
			return vs, nil
		case tEOF:
			return nil, p.errorf(p.tok.pos, "unterminated set of values; expected ')'")
		default:
			return nil, p.errorf(p.tok.pos, "unexpected %s in a set of values; expected a value, ',' or ')'", p.tok.describe())
		}
	}
}
