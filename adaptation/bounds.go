package adaptation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/internal/wirelimit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Decoding a protobuf message amplifies it: an empty entry of a repeated
// message field is 2 bytes on the wire and about 90 bytes once decoded, so
// a 4 MiB message of them decodes into 170 MiB. So the runtime checks what
// a message of a plugin holds on its bytes, before decoding it
// (internal/wirelimit): a plugin's answer (over a connection, in a ttrpc
// client interceptor; from a WASM module, in wasmhost), its Runtime
// service requests (in a ttrpc server interceptor, one request at a time
// per plugin), and ttrpc's envelope around each of them (wire.Conn, as the
// bytes are read).

// The bounds on what one message of a plugin may hold: its answer to an
// event, Configure or Synchronize, or its UpdateContainers request. An
// answer above them is the plugin's failure ([FailureOversize], with an
// [*AnswerCountError]), not decoded; a request above them is refused
// (RESOURCE_EXHAUSTED). See docs/protocol.md §12.2.
const (
	// MaxUpdatesPerMessage bounds the container updates in one message.
	MaxUpdatesPerMessage = wirelimit.MaxUpdates
	// MaxEvictionsPerMessage bounds the container evictions in one
	// message.
	MaxEvictionsPerMessage = wirelimit.MaxEvictions
	// MaxMessageValues bounds the values in one message: its nested
	// messages, the entries of its repeated fields and of its maps (an
	// entry of a map of messages counts two), at any depth.
	MaxMessageValues = wirelimit.MaxValues
	// MaxMessageDepth bounds how deep one message nests.
	MaxMessageDepth = wirelimit.MaxDepth
)

// AnswerCountError is why a plugin's answer was not decoded: it holds more
// than the runtime decodes from one message.
type AnswerCountError struct {
	// Message is the answer's type, such as "SynchronizeResponse".
	Message string
	// Bound says what the answer holds too many of, such as "update
	// entries" ([MaxUpdatesPerMessage]), "values" ([MaxMessageValues]) or
	// "levels of nesting" ([MaxMessageDepth]).
	Bound string
	// Limit is the bound.
	Limit int
}

// Error says what the answer holds too many of.
func (e *AnswerCountError) Error() string {
	return fmt.Sprintf("its answer (%s) holds more than %d %s", e.Message, e.Limit, e.Bound)
}

// bounded returns the error a failure of kind reports: for
// FailureOversize, the *AnswerSizeError or *AnswerCountError that err
// carries (wasmhost and the interceptors report wirelimit's errors), else
// err.
func bounded(kind FailureKind, err error) error {
	if kind != FailureOversize {
		return err
	}
	var (
		size  *wirelimit.SizeError
		count *wirelimit.LimitError
	)
	switch {
	case errors.As(err, &size):
		return &AnswerSizeError{Size: size.Size, Limit: size.Limit}
	case errors.As(err, &count):
		bound := "values"
		switch {
		case count.Field != "":
			bound = string(count.Field.Name()) + " entries"
		case count.What != "values":
			bound = "levels of nesting"
		}
		return &AnswerCountError{Message: string(count.Message.Name()), Bound: bound, Limit: count.Limit}
	}
	return err
}

// isOversize reports whether err refused a plugin's answer for its size or
// what it holds.
func isOversize(err error) bool {
	var (
		size     *wirelimit.SizeError
		count    *wirelimit.LimitError
		answer   *AnswerSizeError
		countErr *AnswerCountError
	)
	return errors.As(err, &size) || errors.As(err, &count) || errors.As(err, &answer) || errors.As(err, &countErr)
}

// methodName returns the method of a ttrpc full method name
// ("/service/method").
func methodName(full string) string { return full[strings.LastIndexByte(full, '/')+1:] }

// isEventMethod reports whether the Plugin service method is an event's
// (its answer bounded by the max answer size).
func isEventMethod(method string) bool {
	return method != "Configure" && method != "Synchronize" && method != "Shutdown"
}

// boundAnswers returns the ttrpc client interceptor of a plugin
// connection: it checks the plugin's answer after ttrpc received it and
// before ttrpc decodes it, against maxAnswer for the answers to events
// (the message limit bounds the others) and against what the runtime
// decodes (wirelimit.Answer). An answer that fails the check is not
// decoded: the call fails with wirelimit's error, which the endpoint
// reports as FailureOversize (or FailureLost for bytes that are not a
// protobuf encoding, as ttrpc's own decoding would).
func boundAnswers(maxAnswer int) ttrpc.UnaryClientInterceptor {
	return func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, _ *ttrpc.UnaryClientInfo, invoke ttrpc.Invoker) error {
		if err := invoke(ctx, req, rsp); err != nil {
			return err
		}
		if isEventMethod(req.Method) && len(rsp.Payload) > maxAnswer {
			return &wirelimit.SizeError{Size: len(rsp.Payload), Limit: maxAnswer}
		}
		if s := wirelimit.Answer(req.Method); s != nil {
			return s.Check(rsp.Payload)
		}
		return nil
	}
}

// boundRequests is the ttrpc server interceptor of a plugin connection:
// it checks each Runtime service request of the plugin before the method
// decodes it (through a wirelimit.Probe, on the bytes where ttrpc holds
// them), and refuses one above the bounds with RESOURCE_EXHAUSTED.
// UpdateContainers requests are checked, decoded and handled one at a
// time: the plugin's other unanswered requests (at most
// WithMaxInFlightUpdates, and MaxMessageSize bytes together) wait as
// their bytes.
func (s *session) boundRequests(ctx context.Context, unmarshal ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, method ttrpc.Method) (any, error) {
	name := methodName(info.FullMethod)
	schema := wirelimit.Request(name)
	if schema == nil {
		return method(ctx, unmarshal)
	}
	if name == "UpdateContainers" {
		select {
		case s.decoding <- struct{}{}:
			defer func() { <-s.decoding }()
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-s.ep.Done():
			return nil, ttrpc.ErrServerClosed
		}
	}
	probe := wirelimit.NewProbe(schema)
	if err := unmarshal(probe); err != nil {
		var lerr *wirelimit.LimitError
		if !errors.As(probe.Err(), &lerr) {
			return nil, err // not a protobuf encoding: as ttrpc says
		}
		s.a.log.Warn("refusing plugin request: it holds more than the runtime decodes from one message",
			"plugin", s.who(), "method", name, "error", lerr)
		return nil, status.Error(codes.ResourceExhausted, lerr.Error())
	}
	return method(ctx, unmarshal)
}

// who names the plugin of the session: its full name once registered,
// else its pid.
func (s *session) who() string {
	select {
	case <-s.decided:
		if s.p != nil {
			return s.p.full
		}
	default:
	}
	return fmt.Sprintf("pid %d (not registered)", s.pid)
}
