package stub

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/nrikit/nrikit/stub/handler"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

var (
	// ErrNotStarted is returned by methods that need a started stub, such
	// as [Stub.Wait] and [Stub.UpdateContainers], before [Stub.Start].
	ErrNotStarted = errors.New("stub: not started")
	// ErrAlreadyStarted is returned by [Stub.Start] and [Stub.Run] while
	// the stub is running.
	ErrAlreadyStarted = errors.New("stub: already started")
	// ErrClosed is returned when the stub was stopped with [Stub.Stop]:
	// by a Start that Stop interrupted, by [Stub.UpdateContainers] after
	// Stop, and as the reason passed to the [WithOnClose] hook.
	ErrClosed = errors.New("stub: stopped")
	// ErrNotConnected is returned by [Stub.UpdateContainers] while the
	// stub has no registered connection, such as while it reconnects.
	ErrNotConnected = errors.New("stub: not connected to the runtime")
	// ErrConnectionLost is wrapped by the errors that report a lost
	// connection to the runtime, such as the result of [Stub.Run]:
	// "stub: connection to runtime lost: <cause>".
	ErrConnectionLost = errors.New("connection to runtime lost")
	// ErrRegistrationTimeout is wrapped by the error [Stub.Start] returns
	// when registration did not complete within the registration timeout.
	ErrRegistrationTimeout = errors.New("registration timed out")
	// ErrNoIndex is wrapped by the error [New] returns when the plugin's
	// index is not given ([WithPluginIdx]), not set by the runtime that
	// launched it, and not in the executable's name (IDX-NAME). A
	// program with a command line reports it as its own flag.
	ErrNoIndex = errors.New("plugin has no index")
	// ErrShutdown is wrapped by the result of [Stub.Run] and [Stub.Wait]
	// when the runtime shut the plugin down with a Shutdown request.
	ErrShutdown = errors.New("stub: runtime shut the plugin down")

	// ErrNotInterestedInPod may be returned (also wrapped) by a
	// RunPodSandbox or CreateContainer handler to opt out of further
	// events about the pod and its containers; see the package
	// documentation. It is the same error as
	// wasmguest.ErrNotInterestedInPod, so that a plugin built both as a
	// process and as a WASM module can return either.
	ErrNotInterestedInPod = handler.ErrNotInterestedInPod
	// ErrNotInterestedInContainer may be returned (also wrapped) by a
	// CreateContainer handler to opt out of further events about the
	// container. It is the same error as
	// wasmguest.ErrNotInterestedInContainer.
	ErrNotInterestedInContainer = handler.ErrNotInterestedInContainer
)

// RegistrationError is returned by [Stub.Start] when the runtime rejected
// the plugin's registration: it is the status of the RegisterPlugin call.
// A nrikit runtime puts the full reason in the message, for example
// `plugin "10-foo" subscribed to events this runtime does not support: ...`.
type RegistrationError struct {
	// Message is the runtime's reason.
	Message string
	// Code is the status code of the RegisterPlugin call, for example
	// codes.InvalidArgument or codes.FailedPrecondition.
	Code codes.Code
}

// Error implements the error interface.
func (e *RegistrationError) Error() string {
	return fmt.Sprintf("stub: runtime rejected registration (%s): %s", e.Code, e.Message)
}

// UnsupportedEventsError is the configuration error returned when the
// runtime cannot deliver events the plugin needs: events given with
// [WithRequiredEvents], or, when Required is false, every event the plugin
// subscribes to. (It is shared with the WASM guest support,
// stub/wasmguest, whose plugins subscribe the same way.)
type UnsupportedEventsError = pcore.UnsupportedEventsError
