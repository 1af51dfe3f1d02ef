// Package nriline reads the "nri:" lines of proto/nrikit/nri.proto's
// comments, which carry the facts of the field and event tables that the
// proto itself cannot say, for the generators in tools/.
package nriline

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// Line returns the text after "nri:" of the comment's line that starts
// with it.
func Line(c protogen.Comments) (string, bool) {
	for l := range strings.SplitSeq(string(c), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "nri:"); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// Pairs parses a line of key=value pairs and bare words (which map to ""),
// separated by spaces; a value with spaces is in Go quotes.
func Pairs(s string) (map[string]string, error) {
	a := map[string]string{}
	for s != "" {
		end := strings.IndexAny(s, " =")
		if end < 0 {
			end = len(s)
		}
		k := s[:end]
		s = s[end:]
		v := ""
		if strings.HasPrefix(s, "=") {
			s = s[1:]
			if strings.HasPrefix(s, `"`) {
				q, err := strconv.QuotedPrefix(s)
				if err != nil {
					return nil, fmt.Errorf("nri: %s: %w", k, err)
				}
				v, _ = strconv.Unquote(q)
				s = s[len(q):]
			} else {
				end := strings.IndexByte(s, ' ')
				if end < 0 {
					end = len(s)
				}
				v, s = s[:end], s[end:]
			}
		}
		if _, dup := a[k]; dup || k == "" {
			return nil, fmt.Errorf("nri: bad or repeated key %q", k)
		}
		a[k] = v
		s = strings.TrimSpace(s)
	}
	return a, nil
}
