package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/internal/trustedfile"
	"github.com/nrikit/nrikit/internal/yamldoc"
)

// MaxFileSize is the largest policy file Parse and Load accept, in bytes.
// A policy of a few hundred grants is far smaller.
const MaxFileSize = 1 << 20

// maxErrors is the number of mistakes Parse reports; more are counted.
const maxErrors = 20

// Error is a mistake in a policy file, at a line.
type Error struct {
	// File is the file's name as given to Parse.
	File string
	// Line is the 1-based line of the mistake, 0 if unknown.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error returns "FILE:LINE: MSG" ("FILE: MSG" without a line).
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Option configures Parse and Load.
type Option func(*config)

// config is the result of applying Options.
type config struct {
	filterOpts []filter.Option
}

// WithFilterOptions passes opts to filter.Compile when Parse compiles the
// grants' where scopes: filter.WithCEL(celscope.Compile) lets a where
// scope have a cel expression (without it, one is an error).
func WithFilterOptions(opts ...filter.Option) Option {
	return func(c *config) { c.filterOpts = append(c.filterOpts, opts...) }
}

// Load reads and parses the policy file at path. The file must be
// trusted as a runtime's configuration is (internal/trustedfile: a
// regular file owned by root or the effective user, not writable by its
// group or others), and so must its directory and every directory on the
// way to it, as the plugin directory (see [CheckDirectory]); it is at
// most MaxFileSize bytes. Whoever can write it decides what every plugin
// may do, and whoever can write its directory can remove it.
func Load(path string, opts ...Option) (*Policy, error) {
	if err := checkFile(path); err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	data, err := trustedfile.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return Parse(path, data, opts...)
}

// checkFile checks the directories of the policy file at path: the one
// it is named in and, if it is a symbolic link, the one of the file it
// leads to (trustedfile.CheckDir), and the way to the file
// (trustedfile.CheckPath).
func checkFile(path string) error {
	if err := CheckDirectory(path); err != nil {
		return err
	}
	real, _, err := trustedfile.CheckPath(path)
	if err != nil {
		return err
	}
	if _, err := trustedfile.CheckDir(filepath.Dir(real)); err != nil {
		return err
	}
	return nil
}

// CheckDirectory returns why the directory of the policy file at path is
// not trusted, or nil: it must be owned by root or the effective user and
// not writable by its group or others, and so must every directory on
// the way to it (which may be writable by others if it has the sticky
// bit, as /tmp), as for the plugin directory (trustedfile.CheckDir). It
// does not look at the file, which need not exist: a runtime without its
// policy file in a directory others may write cannot tell whether the
// administrator removed it or someone else did. A directory that does
// not exist is no reason (nil).
func CheckDirectory(path string) error {
	_, err := trustedfile.CheckDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) && !trustedfile.IsUntrusted(err) {
		return nil
	}
	return err
}

// LoadUntrusted is Load without the owner and mode rules, for a tool
// that checks a file a user names (nri check policy).
func LoadUntrusted(path string, opts ...Option) (*Policy, error) {
	f, _, err := trustedfile.OpenRegular(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	defer f.Close()
	data, err := trustedfile.ReadAll(f, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return Parse(path, data, opts...)
}

// CheckTrusted returns why Load would refuse the file at path (its owner,
// its mode, its type, its directories), or nil.
func CheckTrusted(path string) error {
	if err := checkFile(path); err != nil {
		return err
	}
	f, _, err := trustedfile.Open(path, MaxFileSize)
	if err != nil {
		return err
	}
	return f.Close()
}

// Parse decodes and compiles a policy document; file names it in errors.
// Mistakes are *Error values naming the file and line (joined with
// errors.Join, at most 20 of them): unknown or duplicate keys, values of
// the wrong type, more than one YAML document, and every rule that does
// not compile (a malformed glob, an unknown rlimit, namespace type or
// enum name, a relative mount source, a device rule without its major
// number, a where scope filter.Compile refuses). An empty document is a
// valid policy that grants no plugin anything.
func Parse(file string, data []byte, opts ...Option) (*Policy, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("%d bytes long, the limit is %d", len(data), MaxFileSize)}
	}
	var doc Document
	if err := yamldoc.Decode(data, &doc); err != nil {
		return nil, located(file, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil { // decoded above: cannot fail
		return nil, located(file, err)
	}
	c := &compiler{file: file, root: &root, cfg: &cfg}
	p := c.compile(&doc)
	if len(c.errs) > 0 {
		errs := c.errs
		if len(errs) > maxErrors {
			errs = append(errs[:maxErrors:maxErrors], &Error{File: file, Msg: fmt.Sprintf("and %d more mistakes", len(c.errs)-maxErrors)})
		}
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// located turns yamldoc's errors into *Error values of file.
func located(file string, err error) error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	out := make([]error, 0, len(list))
	for _, e := range list {
		var de *yamldoc.Error
		if errors.As(e, &de) {
			out = append(out, &Error{File: file, Line: de.Line, Msg: de.Msg})
		} else {
			out = append(out, &Error{File: file, Msg: e.Error()})
		}
	}
	return errors.Join(out...)
}

// compiler compiles a Document, collecting mistakes.
type compiler struct {
	file string
	root *yaml.Node
	cfg  *config
	errs []error
	// action is the policy's, the grants' default.
	action Action
}

// errorf records a mistake at the YAML path (keys and indices from the
// document's root; the line is that of the deepest node found).
func (c *compiler) errorf(path []any, format string, args ...any) {
	c.errs = append(c.errs, &Error{File: c.file, Line: c.line(path), Msg: pathString(path) + ": " + fmt.Sprintf(format, args...)})
}

// line returns the line of the node at path, or of its deepest ancestor
// found.
func (c *compiler) line(path []any) int {
	n := c.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, step := range path {
		var next *yaml.Node
		switch s := step.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == s {
						next = n.Content[i+1]
						if next.Kind == yaml.MappingNode || next.Kind == yaml.SequenceNode {
							line = n.Content[i].Line // the key's line, for a block
						} else {
							line = next.Line
						}
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && s < len(n.Content) {
				next = n.Content[s]
				line = next.Line
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line
}

// pathString renders a YAML path: grants[1].adjust.mounts.
func pathString(path []any) string { return yamldoc.PathString(path) }

// at returns path extended by steps, as a new slice.
func at(path []any, steps ...any) []any {
	return append(append(make([]any, 0, len(path)+len(steps)), path...), steps...)
}
