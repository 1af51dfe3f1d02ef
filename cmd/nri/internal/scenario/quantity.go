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
	v, err := decodeScalar(n, "a quantity such as 512Mi", ParseQuantity)
	*q = Quantity(v)
	return err
}

// decodeScalar parses the scalar n with parse; what names what it must
// be, for the error about a node that is not a scalar.
func decodeScalar(n *yaml.Node, what string, parse func(string) (int64, error)) (int64, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("line %d: expected %s", n.Line, what)
	}
	v, err := parse(n.Value)
	if err != nil {
		return 0, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return v, nil
}

// String writes q with the largest binary suffix that divides it
// ("512Mi"), or as bytes.
func (q Quantity) String() string {
	for _, x := range []struct {
		suffix string
		factor int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if q != 0 && int64(q)%x.factor == 0 {
			return strconv.FormatInt(int64(q)/x.factor, 10) + x.suffix
		}
	}
	return strconv.FormatInt(int64(q), 10)
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

// CPUQuantity is an amount of CPU in thousandths of a CPU, written as
// Kubernetes writes it: "250m", "2", "0.5".
type CPUQuantity int64

// maxCPU bounds a CPU quantity: a million CPUs.
const maxCPU = 1_000_000

// UnmarshalYAML decodes a CPU quantity.
func (q *CPUQuantity) UnmarshalYAML(n *yaml.Node) error {
	v, err := decodeScalar(n, "a CPU quantity such as 250m or 2", ParseCPUQuantity)
	*q = CPUQuantity(v)
	return err
}

// ParseCPUQuantity parses a CPU quantity into thousandths of a CPU: an
// integer with the suffix m ("250m"), or a number of CPUs with at most
// three decimals ("2", "0.5"), at most a million CPUs.
func ParseCPUQuantity(s string) (int64, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("invalid CPU quantity %q: want thousandths of a CPU such as 250m, or CPUs such as 2 or 0.5", s)
	if milli, ok := strings.CutSuffix(s, "m"); ok {
		v, err := strconv.ParseUint(milli, 10, 63)
		if err != nil {
			return 0, bad
		}
		if v > maxCPU*1000 {
			return 0, fmt.Errorf("CPU quantity %q is more than a million CPUs", s)
		}
		return int64(v), nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 3 {
		return 0, bad
	}
	w, err := strconv.ParseUint(whole, 10, 63)
	if err != nil {
		return 0, bad
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 16); err != nil {
			return 0, bad
		}
	}
	if w > maxCPU || w == maxCPU && f > 0 {
		return 0, fmt.Errorf("CPU quantity %q is more than a million CPUs", s)
	}
	return int64(w*1000 + f), nil
}

// String writes q as Kubernetes does: whole CPUs, or thousandths ("250m").
func (q CPUQuantity) String() string {
	if q%1000 == 0 {
		return strconv.FormatInt(int64(q/1000), 10)
	}
	return strconv.FormatInt(int64(q), 10) + "m"
}
