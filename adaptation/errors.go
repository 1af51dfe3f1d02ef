package adaptation

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// ErrStopped is returned by calls on an Adaptation that was stopped.
	ErrStopped = errors.New("adaptation: stopped")
	// errPluginGone is what a plugin's queued work learns when the plugin
	// was disconnected before the work ran.
	errPluginGone = errors.New("plugin disconnected")
	// errFiltered tells a work that the plugin saw the event's object in
	// its Synchronize snapshot (creation), or never saw it (removal): see
	// queue.CatchUp.
	errFiltered = errors.New("event filtered for a synchronizing plugin")
	// errOptedOut tells a work that the plugin opted out of the event's
	// pod or container after the event was queued for it.
	errOptedOut = errors.New("plugin opted out of the event's object")
)

// RegistrationError is why the runtime refused a plugin's registration.
// Its message is exactly what the plugin receives as the status message
// of its RegisterPlugin call; Code is the status code.
type RegistrationError struct {
	// Plugin is the plugin's full name (IDX-NAME), as far as known.
	Plugin string
	// Code is the ttrpc status code sent to the plugin.
	Code codes.Code
	// Reason is the full message.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the reason, as the plugin received it.
func (e *RegistrationError) Error() string { return e.Reason }

// Unwrap returns the underlying cause.
func (e *RegistrationError) Unwrap() error { return e.Err }

// GRPCStatus makes ttrpc send Code and Reason to the plugin.
func (e *RegistrationError) GRPCStatus() *status.Status { return status.New(e.Code, e.Reason) }

func registrationError(plugin string, code codes.Code, cause error, format string, args ...any) *RegistrationError {
	return &RegistrationError{Plugin: plugin, Code: code, Reason: fmt.Sprintf(format, args...), Err: cause}
}

// FailureKind classifies how a plugin failed a request.
type FailureKind int

const (
	// FailureRejected: the plugin answered with an error.
	FailureRejected FailureKind = iota + 1
	// FailureTimeout: the plugin did not answer within its request
	// timeout.
	FailureTimeout
	// FailureLost: the connection to the plugin was lost or the plugin
	// broke the protocol.
	FailureLost
	// FailureOversize: the plugin's answer was larger than the runtime
	// accepts ([WithMaxAnswerSize]), held more than it decodes from one
	// message ([MaxUpdatesPerMessage], [MaxMessageValues], ...), or made
	// the request larger than NRI can carry ([MaxMessageSize]). The answer
	// is not used; the plugin stays connected. Err is an
	// [*AnswerSizeError] or an [*AnswerCountError].
	FailureOversize
	// FailureSynchronizing: the plugin was still synchronizing when the
	// event could wait for it no longer ([WithSynchronizeWait]). It
	// stays connected and gets the event once synchronized.
	FailureSynchronizing
	// FailureCrashed: the plugin crashed handling the request: a WASM
	// plugin's instance trapped, exited (a Go guest that panics or runs
	// out of memory exits) or broke the ABI, and was discarded. Like a
	// timeout, it fails the request if the plugin's failure policy says
	// so; the plugin is kept, with a fresh instance for its next call,
	// if its policy keeps it connected, else it is dropped.
	FailureCrashed
	// FailureDenied: the plugin's answer made changes its grant under
	// the administrator's policy does not allow ([WithPolicy]). None of
	// the answer's changes are used; the request fails if the plugin's
	// failure policy says so. Err is a [*policy.DeniedError].
	FailureDenied
)

// String returns the failure kind's name.
func (k FailureKind) String() string {
	switch k {
	case FailureRejected:
		return "rejected"
	case FailureTimeout:
		return "timeout"
	case FailureLost:
		return "lost"
	case FailureOversize:
		return "oversize"
	case FailureSynchronizing:
		return "synchronizing"
	case FailureCrashed:
		return "crashed"
	case FailureDenied:
		return "denied"
	}
	return fmt.Sprintf("FailureKind(%d)", int(k))
}

// PluginError is a request that failed because of one plugin. It wraps
// the plugin's own error (a status error for rejections,
// context.DeadlineExceeded for timeouts).
type PluginError struct {
	// Plugin is the plugin's full name (IDX-NAME).
	Plugin string
	// Op is the request: an event name such as "CreateContainer", or
	// "Configure", "Synchronize".
	Op string
	// Kind says how the plugin failed.
	Kind FailureKind
	// Timeout is the timeout that expired, for FailureTimeout, or the
	// synchronize wait, for FailureSynchronizing.
	Timeout time.Duration
	// Err is the underlying error.
	Err error
}

// Error names the plugin, the request and what went wrong.
func (e *PluginError) Error() string {
	switch e.Kind {
	case FailureTimeout:
		return fmt.Sprintf("plugin %q did not answer %s within %v", e.Plugin, e.Op, e.Timeout)
	case FailureLost:
		return fmt.Sprintf("plugin %q was lost during %s: %v", e.Plugin, e.Op, e.Err)
	case FailureCrashed:
		return fmt.Sprintf("plugin %q crashed during %s: %v", e.Plugin, e.Op, e.Err)
	case FailureOversize:
		return fmt.Sprintf("plugin %q failed %s: %v", e.Plugin, e.Op, e.Err)
	case FailureSynchronizing:
		return fmt.Sprintf("plugin %q was still synchronizing; %s could not wait for it longer than %v", e.Plugin, e.Op, e.Timeout)
	default:
		return fmt.Sprintf("plugin %q failed %s: %v", e.Plugin, e.Op, errorMessage(e.Err))
	}
}

// Unwrap returns the plugin's error.
func (e *PluginError) Unwrap() error { return e.Err }

// AnswerSizeError is why a plugin's answer was not used: it was larger
// than the runtime accepts, or it made the request that carries the
// merged result (to the next plugin or to the validators) too large.
type AnswerSizeError struct {
	// Size is the encoded size, in bytes, of the answer, or of the
	// request it made too large.
	Size int
	// Limit is the limit Size exceeds.
	Limit int
	// Merged is set when the merged request, not the answer itself,
	// is too large.
	Merged bool
}

// Error says what was too large.
func (e *AnswerSizeError) Error() string {
	if e.Merged {
		return fmt.Sprintf("its answer makes the request carrying the merged result %d bytes, above the message limit of %d", e.Size, e.Limit)
	}
	return fmt.Sprintf("its answer is %d bytes, above the limit of %d", e.Size, e.Limit)
}

// ValidationError is a container creation rejected by a validating
// plugin.
type ValidationError struct {
	// Validator is the validating plugin's full name (IDX-NAME).
	Validator string
	// Container is the name of the container being created.
	Container string
	// Reason is the validator's reason.
	Reason string
}

// Error names the validator, the container and the validator's reason.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("validator %q rejected the adjustment of container %q: %s", e.Validator, e.Container, e.Reason)
}

// RequiredPluginError is a container creation refused because a plugin
// the administrator marked required (see [PluginPolicy]) is not there.
type RequiredPluginError struct {
	// Plugin is the required plugin's full name (IDX-NAME).
	Plugin string
	// Err is why it is missing: nil if it is not connected, else its
	// failure during the request (a *PluginError).
	Err error
}

// Error names the missing required plugin.
func (e *RequiredPluginError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("required plugin %q is not connected", e.Plugin)
	}
	return fmt.Sprintf("required plugin %q is missing: %v", e.Plugin, e.Err)
}

// Unwrap returns the plugin's failure, if any.
func (e *RequiredPluginError) Unwrap() error { return e.Err }

// errorMessage returns the message of a status error without the
// "rpc error: code = ... desc =" decoration, else err.Error().
func errorMessage(err error) string {
	if err == nil {
		return "<nil>"
	}
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// ScopeError is a plugin's request to update or evict a container outside
// its scope (see docs/scope.md). In an answer to an event it fails the
// request, wrapped in a [*PluginError]; in Runtime.UpdateContainers an
// out-of-scope update is returned as failed and an out-of-scope eviction
// refuses the whole request with this message.
type ScopeError struct {
	// Plugin is the plugin's full name (IDX-NAME).
	Plugin string
	// Action is "update" or "evict".
	Action string
	// Container is the ID of the container.
	Container string
}

// Error names the plugin, what it asked for and the container outside its scope.
func (e *ScopeError) Error() string {
	return fmt.Sprintf("cannot %s container %q: it is outside the scope of plugin %q", e.Action, e.Container, e.Plugin)
}
