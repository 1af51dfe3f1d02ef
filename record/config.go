package record

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/nrikit/nrikit/internal/yamldoc"
	"github.com/nrikit/nrikit/record/recordpb"
)

// Defaults of a recording's configuration.
const (
	// DefaultPath is where a recording is written.
	DefaultPath = "/var/lib/nri-record/node.nrirec"
	// KeySuffix makes the default key file of a recording: Path with it
	// appended.
	KeySuffix = ".key"
)

// Config is a recording's configuration: where it is written, its size
// cap and how values are redacted. It is the YAML of the recorder
// plugin's -config file (whose flags of the same names override it) and
// of a recording runtime's record.yaml (record/runtimerec).
type Config struct {
	// Path is the recording (rotated files: Path.1, Path.2, ...; default
	// DefaultPath).
	Path string `yaml:"path"`
	// MaxFileSize is the compressed size in bytes past which the file
	// is rotated (0: DefaultMaxFileSize).
	MaxFileSize int64 `yaml:"maxFileSize"`
	// MaxFiles is the number of files kept (0: DefaultMaxFiles).
	MaxFiles int `yaml:"maxFiles"`
	// KeyFile holds the redaction key (created 0600 if missing; default
	// Path+KeySuffix); it stays on the node.
	KeyFile string `yaml:"keyFile"`
	// Redact is false to keep every value in clear (default true).
	Redact *bool `yaml:"redact"`
	// KeepEnv and KeepAnnotations are the variable names and annotation
	// keys whose values are kept in clear: patterns where * matches any
	// run of characters (slashes included) and ? one character.
	KeepEnv         []string `yaml:"keepEnv"`
	KeepAnnotations []string `yaml:"keepAnnotations"`
}

// ParseConfig decodes a configuration (name labels its errors); unknown
// keys are errors.
func ParseConfig(name, text string) (Config, error) {
	var c Config
	if strings.TrimSpace(text) == "" {
		return c, nil
	}
	if err := yamldoc.Decode([]byte(text), &c); err != nil {
		return Config{}, fmt.Errorf("%s: invalid recording configuration: %w", name, err)
	}
	if err := c.Check(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// Check reports what makes the configuration invalid.
func (c *Config) Check() error {
	switch {
	case c.MaxFileSize < 0:
		return fmt.Errorf("invalid recording configuration: maxFileSize %d: want 0 or more", c.MaxFileSize)
	case c.MaxFiles < 0:
		return fmt.Errorf("invalid recording configuration: maxFiles %d: want 0 or more", c.MaxFiles)
	case c.Path != "" && !filepath.IsAbs(c.Path):
		return fmt.Errorf("invalid recording configuration: path %q: want an absolute path", c.Path)
	case c.KeyFile != "" && !filepath.IsAbs(c.KeyFile):
		return fmt.Errorf("invalid recording configuration: keyFile %q: want an absolute path", c.KeyFile)
	}
	if _, err := NewRedactor(make([]byte, KeySize), c.KeepEnv, c.KeepAnnotations); err != nil {
		return fmt.Errorf("invalid recording configuration: %w", err)
	}
	return nil
}

// Redacts reports whether values are redacted.
func (c *Config) Redacts() bool { return c.Redact == nil || *c.Redact }

// Start returns a recorder writing as c says, with header (its source,
// node and recorder name; the rest is filled in): it loads the redaction
// key, creating it if missing (see [Config.Redactor]). The file is
// created when the runtime configures the recorder.
func (c Config) Start(header *recordpb.Header, log *slog.Logger) (*Recorder, error) {
	red, err := c.Redactor()
	if err != nil {
		return nil, err
	}
	rec, err := c.Recorder(header, log)
	if err != nil {
		return nil, err
	}
	rec.SetRedactor(red)
	return rec, nil
}

// Recorder returns a recorder writing as c says, with header, that does
// not redact until given a redactor ([Recorder.SetRedactor]): what
// touches the disk waits for the runtime.
func (c Config) Recorder(header *recordpb.Header, log *slog.Logger) (*Recorder, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return NewRecorder(RecorderConfig{
		Writer: WriterConfig{Path: c.path(), MaxFileSize: c.MaxFileSize, MaxFiles: c.MaxFiles, Header: header},
		Log:    log,
	})
}

// Redactor returns the redactor c asks for (nil if values are kept): it
// loads the key file (KeyFile, default Path+KeySuffix), creating it
// (0600, random) if missing.
func (c Config) Redactor() (*Redactor, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if !c.Redacts() {
		return nil, nil
	}
	keyFile := c.KeyFile
	if keyFile == "" {
		keyFile = c.path() + KeySuffix
	}
	key, err := LoadKey(keyFile)
	if err != nil {
		return nil, err
	}
	return NewRedactor(key, c.KeepEnv, c.KeepAnnotations)
}

// path is the recording's path.
func (c Config) path() string {
	if c.Path == "" {
		return DefaultPath
	}
	return c.Path
}
