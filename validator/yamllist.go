package validator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseList parses the YAML sequence of strings in an annotation value:
// a flow sequence (`[a, "b", 'c']`, which includes JSON arrays) or a block
// sequence (lines of `- item`). An empty value is an empty list. This is
// the subset of YAML that annotation values use; nested collections and
// other documents are rejected.
func parseList(value string) ([]string, error) {
	s := strings.TrimSpace(value)
	switch {
	case s == "":
		return nil, nil
	case strings.HasPrefix(s, "["):
		return parseFlowList(s)
	case strings.HasPrefix(s, "-"):
		return parseBlockList(s)
	}
	return nil, fmt.Errorf("not a list: %q", s)
}

func parseFlowList(s string) ([]string, error) {
	if !strings.HasSuffix(s, "]") {
		return nil, errors.New("unterminated flow sequence")
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	var items []string
	for body != "" {
		item, rest, err := nextFlowItem(body)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("expected ',' before %q", rest)
		}
		body = strings.TrimSpace(rest[1:]) // a trailing comma ends the list
	}
	return items, nil
}

// nextFlowItem splits the first item off a flow sequence body.
func nextFlowItem(body string) (item, rest string, err error) {
	switch body[0] {
	case '"', '\'':
		end, err := quotedEnd(body)
		if err != nil {
			return "", "", err
		}
		item, err := unquote(body[:end])
		return item, body[end:], err
	case ',', '[', ']', '{', '}':
		return "", "", fmt.Errorf("unexpected %q in flow sequence", body[0])
	}
	end := strings.IndexAny(body, ",[]{}")
	if end < 0 {
		end = len(body)
	}
	if end < len(body) && body[end] != ',' {
		return "", "", fmt.Errorf("unexpected %q in flow sequence", body[end])
	}
	return strings.TrimSpace(body[:end]), body[end:], nil
}

// quotedEnd returns the index just past the quoted scalar s starts with.
func quotedEnd(s string) (int, error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated quoted string %s", s)
}

func unquote(s string) (string, error) {
	if s[0] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	}
	v, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("invalid quoted string %s: %w", s, err)
	}
	return v, nil
}

func parseBlockList(s string) ([]string, error) {
	var items []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line != "-" && !strings.HasPrefix(line, "- ") {
			return nil, fmt.Errorf("expected a '- item' line, got %q", line)
		}
		item := strings.TrimSpace(strings.TrimPrefix(line, "-"))
		switch {
		case item == "":
		case item[0] == '"' || item[0] == '\'':
			end, err := quotedEnd(item)
			if err != nil {
				return nil, err
			}
			if tail := strings.TrimSpace(item[end:]); tail != "" && !strings.HasPrefix(tail, "#") {
				return nil, fmt.Errorf("unexpected %q after quoted item", tail)
			}
			if item, err = unquote(item[:end]); err != nil {
				return nil, err
			}
		case item == "-" || strings.HasPrefix(item, "- ") || item[0] == '[' || item[0] == '{':
			return nil, fmt.Errorf("nested collections are not supported: %q", item)
		default:
			if i := strings.Index(item, " #"); i >= 0 {
				item = strings.TrimSpace(item[:i])
			}
		}
		items = append(items, item)
	}
	return items, nil
}
