package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Quantity is an amount of bytes, written as an integer or with a
// Kubernetes suffix: "512Mi", "2Gi", "1G", "100k".
type Quantity int64

// UnmarshalYAML decodes an integer or a suffixed quantity.
func (q *Quantity) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: expected a quantity such as 512Mi", n.Line)
	}
	v, err := ParseQuantity(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*q = Quantity(v)
	return nil
}

// ParseQuantity parses an integer with an optional binary (Ki, Mi, Gi, Ti)
// or decimal (k, M, G, T) suffix.
func ParseQuantity(s string) (int64, error) {
	s = strings.TrimSpace(s)
	suffixes := []struct {
		suffix string
		factor int64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	}
	factor := int64(1)
	num := s
	for _, x := range suffixes {
		if strings.HasSuffix(s, x.suffix) {
			factor, num = x.factor, strings.TrimSuffix(s, x.suffix)
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid quantity %q: want a non-negative integer with an optional suffix Ki, Mi, Gi, Ti, k, M, G or T", s)
	}
	if v > math.MaxInt64/factor {
		return 0, fmt.Errorf("quantity %q is too large", s)
	}
	return v * factor, nil
}
