package filter

import (
	"strconv"
	"strings"
)

// selTokKind is the kind of a label selector token.
type selTokKind uint8

const (
	tEOF     selTokKind = iota
	tIdent              // a key, value, or the keywords in/notin
	tBang               // !
	tEq                 // =
	tEqEq               // ==
	tNotEq              // !=
	tOpen               // (
	tClose              // )
	tComma              // ,
	tLess               // < (unsupported)
	tGreater            // > (unsupported)
)

// selToken is one token and its byte offset.
type selToken struct {
	kind selTokKind
	text string
	pos  int
}

// describe renders the token for error messages.
func (t selToken) describe() string {
	switch t.kind {
	case tEOF:
		return "end of selector"
	case tIdent:
		return "identifier " + strconv.Quote(t.text)
	default:
		return "'" + t.text + "'"
	}
}

// selLexer splits a selector into tokens. As in Kubernetes, an identifier is
// a maximal run of characters other than whitespace and !=(),<>.
type selLexer struct {
	src string
	pos int
}

func isSelSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isSelSpecial(c byte) bool { return strings.IndexByte("!=(),<>", c) >= 0 }

func (l *selLexer) next() selToken {
	for l.pos < len(l.src) && isSelSpace(l.src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if start == len(l.src) {
		return selToken{kind: tEOF, pos: start}
	}
	tok := func(k selTokKind, n int) selToken {
		l.pos += n
		return selToken{kind: k, text: l.src[start:l.pos], pos: start}
	}
	twoEq := start+1 < len(l.src) && l.src[start+1] == '='
	switch l.src[start] {
	case '!':
		if twoEq {
			return tok(tNotEq, 2)
		}
		return tok(tBang, 1)
	case '=':
		if twoEq {
			return tok(tEqEq, 2)
		}
		return tok(tEq, 1)
	case '(':
		return tok(tOpen, 1)
	case ')':
		return tok(tClose, 1)
	case ',':
		return tok(tComma, 1)
	case '<':
		return tok(tLess, 1)
	case '>':
		return tok(tGreater, 1)
	}
	end := start
	for end < len(l.src) && !isSelSpace(l.src[end]) && !isSelSpecial(l.src[end]) {
		end++
	}
	return tok(tIdent, end-start)
}

// checkQualifiedName validates a label key the way Kubernetes does and
// returns "" or what is wrong with it.
func checkQualifiedName(key string) string {
	name := key
	if prefix, rest, found := strings.Cut(key, "/"); found {
		if prefix == "" {
			return "prefix part must not be empty"
		}
		if msg := checkDNSSubdomain(prefix); msg != "" {
			return "prefix part " + msg
		}
		name = rest
	}
	if name == "" {
		return "name part must not be empty"
	}
	if len(name) > 63 {
		return "name part must be no more than 63 characters"
	}
	if !isLabelChars(name) {
		return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	}
	return ""
}

// checkLabelValue validates a label value the way Kubernetes does.
func checkLabelValue(v string) string {
	if len(v) > 63 {
		return "must be no more than 63 characters"
	}
	if v != "" && !isLabelChars(v) {
		return "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	}
	return ""
}

// isLabelChars reports whether s matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func isLabelChars(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// checkDNSSubdomain validates a lowercase RFC 1123 subdomain of at most 253
// characters: dot-separated labels of [a-z0-9-] starting and ending
// alphanumerically.
func checkDNSSubdomain(s string) string {
	const msg = "must be a lowercase RFC 1123 subdomain: '.'-separated parts of lowercase alphanumeric characters or '-', each starting and ending with an alphanumeric character"
	if len(s) > 253 {
		return "must be no more than 253 characters"
	}
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || !isLowerAlnum(part[0]) || !isLowerAlnum(part[len(part)-1]) {
			return msg
		}
		for i := 1; i < len(part)-1; i++ {
			if c := part[i]; !isLowerAlnum(c) && c != '-' {
				return msg
			}
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return isLowerAlnum(c) || 'A' <= c && c <= 'Z'
}

func isLowerAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}
