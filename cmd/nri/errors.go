package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nrikit/nrikit/cmd/nri/internal/checkcmd"
	"github.com/spf13/cobra"
)

// Exit codes of the nri command (documented in docs/cli.md).
const (
	exitOK          = 0
	exitSteps       = 1 // a step did not go as the scenario expects, an unexpected refusal included
	exitUsage       = 2 // a file named on the command line that cannot be read included
	exitScenario    = 3 // invalid scenario file, or policy file (--policy, nri check)
	exitPlugins     = 4 // a plugin did not register or was lost, or serve's wait failed
	exitFailure     = 5
	exitChecks      = 6 // nri check: a conformance check failed
	exitInterrupted = 130
	exitBrokenPipe  = 141 // the output's reader went away (128 + SIGPIPE)
)

// codedError is an error with the exit code it causes.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

func codef(code int, format string, args ...any) error {
	return &codedError{code: code, err: fmt.Errorf(format, args...)}
}

// exitCode prints err (unless it was printed already) and returns the
// process's exit status.
func exitCode(ctx context.Context, err error, g *globals) int {
	if err == nil {
		return exitOK
	}
	var ee *codedError
	var checkUsage *checkcmd.UsageError
	code := exitFailure
	if errors.As(err, &ee) {
		code = ee.code
	} else if errors.As(err, &checkUsage) {
		code = exitUsage
	} else if errors.Is(err, checkcmd.ErrChecksFailed) {
		code = exitChecks
	} else if errors.Is(err, checkcmd.ErrInvalidPolicy) {
		code = exitScenario
	} else if ctx.Err() != nil {
		code = exitInterrupted
	}
	if !errors.Is(err, errReported) {
		g.notice(slog.LevelError, err.Error(), slog.Int("exitCode", code))
	}
	return code
}

// helpHint is how a usage error's message ends: where to read the usage.
const helpHint = " --help)"

// withHelpHint ends the message of a usage error of cmd with where to read
// the command's usage, "(see nri run --help)", unless it says so already;
// every usage error is worded "invalid --FLAG VALUE: want ..." or names
// what is missing, then this hint.
func withHelpHint(err error, cmd *cobra.Command) error {
	if err == nil || cmd == nil || strings.HasSuffix(err.Error(), helpHint) {
		return err
	}
	var ee *codedError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		return err
	}
	return &codedError{code: exitUsage, err: fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
}

// errReported marks an error whose details were printed already.
var errReported = errors.New("reported")

func isCoded(err error) bool {
	var ee *codedError
	return errors.As(err, &ee)
}

// isUsage recognises cobra's own usage errors (unknown commands).
func isUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.Contains(err.Error(), "requires at least") || strings.Contains(err.Error(), "accepts at most")
}
