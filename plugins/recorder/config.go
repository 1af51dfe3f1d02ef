package recorder

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nrikit/nrikit/internal/yamldoc"
	"github.com/nrikit/nrikit/record"
)

// Defaults of the recorder's configuration.
const (
	// DefaultPath is where the recording is written.
	DefaultPath = "/var/lib/nri-record/node.nrirec"
	// DefaultKeyFile holds the redaction key, beside the recording.
	DefaultKeyFile = "/var/lib/nri-record/key"
)

// Config is the recorder's configuration (the -config file, YAML; the
// flags of the same names override it).
type Config struct {
	// Path is the recording (rotated files: Path.1, Path.2, ...).
	Path string `yaml:"path"`
	// MaxFileSize is the compressed size in bytes past which the file
	// is rotated (0: record.DefaultMaxFileSize).
	MaxFileSize int64 `yaml:"maxFileSize"`
	// MaxFiles is the number of files kept (0: record.DefaultMaxFiles).
	MaxFiles int `yaml:"maxFiles"`
	// KeyFile holds the redaction key (created 0600 if missing); it
	// stays on the node.
	KeyFile string `yaml:"keyFile"`
	// Redact is false to keep every value in clear (default true).
	Redact *bool `yaml:"redact"`
	// KeepEnv and KeepAnnotations are the variable names and annotation
	// keys (path.Match patterns) whose values are kept in clear.
	KeepEnv         []string `yaml:"keepEnv"`
	KeepAnnotations []string `yaml:"keepAnnotations"`
}

// ParseConfig decodes a configuration; unknown keys are errors.
func ParseConfig(text string) (Config, error) {
	var c Config
	if strings.TrimSpace(text) == "" {
		return c, nil
	}
	if err := yamldoc.Decode([]byte(text), &c); err != nil {
		return Config{}, fmt.Errorf("invalid recorder configuration: %w", err)
	}
	return c, c.check()
}

func (c *Config) check() error {
	switch {
	case c.MaxFileSize < 0:
		return fmt.Errorf("invalid recorder configuration: maxFileSize %d: want 0 or more", c.MaxFileSize)
	case c.MaxFiles < 0:
		return fmt.Errorf("invalid recorder configuration: maxFiles %d: want 0 or more", c.MaxFiles)
	case c.Path != "" && !filepath.IsAbs(c.Path):
		return fmt.Errorf("invalid recorder configuration: path %q: want an absolute path", c.Path)
	}
	if _, err := record.NewRedactor(make([]byte, record.KeySize), c.KeepEnv, c.KeepAnnotations); err != nil {
		return fmt.Errorf("invalid recorder configuration: %w", err)
	}
	return nil
}

// redact reports whether values are redacted.
func (c *Config) redact() bool { return c.Redact == nil || *c.Redact }
