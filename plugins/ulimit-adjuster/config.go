package ulimitadjuster

import (
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/internal/yamldoc"
	"github.com/nrikit/nrikit/plugins/internal/allow"
)

// Config is the plugin's configuration: which limits a pod may set, up to
// what. The zero Config (no configuration) allows none.
type Config struct {
	// Namespaces are the namespaces (patterns) whose pods the plugin
	// serves; empty: every namespace. The plugin leaves the pods of
	// other namespaces alone.
	Namespaces allow.Namespaces `yaml:"namespaces"`
	// Limits caps each limit a pod may set, by type (any spelling
	// NormalizeType takes; canonical after ParseConfig): the hard value,
	// and so the soft one, may not exceed the cap. A type not listed
	// cannot be set.
	Limits map[string]Cap `yaml:"limits"`
}

// Cap is the highest value a limit may be set to. In YAML it is a
// non-negative integer or "unlimited" (RLIM_INFINITY).
type Cap uint64

// Unlimited is the cap "unlimited": RLIM_INFINITY, what `ulimit -n
// unlimited` sets.
const Unlimited Cap = math.MaxUint64

// UnmarshalYAML reads an integer or "unlimited".
func (c *Cap) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "unlimited" {
		*c = Unlimited
		return nil
	}
	v, err := strconv.ParseUint(n.Value, 0, 64)
	if n.Kind != yaml.ScalarNode || err != nil {
		return fmt.Errorf("line %d: cap %q: want a non-negative integer or unlimited", n.Line, n.Value)
	}
	*c = Cap(v)
	return nil
}

// String returns the cap as written in YAML.
func (c Cap) String() string {
	if c == Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(uint64(c), 10)
}

// ParseConfig decodes and checks a configuration (the runtime's, or the
// file of -config): unknown keys and unknown limit types are errors, and
// so are two spellings of one type. The error names the plugin, and the
// line or the field.
func ParseConfig(config string) (Config, error) {
	var c Config
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid ulimit-adjuster configuration: %w", err)
	}
	if err := c.Namespaces.Validate(); err != nil {
		return Config{}, fmt.Errorf("invalid ulimit-adjuster configuration: %w", err)
	}
	limits := make(map[string]Cap, len(c.Limits))
	for t, v := range c.Limits {
		name, err := NormalizeType(t)
		if err != nil {
			return Config{}, fmt.Errorf("invalid ulimit-adjuster configuration: limits: %w", err)
		}
		if _, dup := limits[name]; dup {
			return Config{}, fmt.Errorf("invalid ulimit-adjuster configuration: limits: %s is given twice", name)
		}
		limits[name] = v
	}
	c.Limits = limits
	return c, nil
}

// CheckLimit returns why l (with a canonical type) is refused, or "" if
// its type has a cap its hard value does not exceed.
func (c *Config) CheckLimit(l Limit) string {
	limit, ok := c.Limits[l.Type]
	switch {
	case !ok:
		return fmt.Sprintf("%s is not one of the plugin's limits", l.Type)
	case l.Hard > uint64(limit):
		return fmt.Sprintf("the hard limit %d exceeds the plugin's cap %s", l.Hard, limit)
	}
	return ""
}
