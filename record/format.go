package record

import (
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Version is the format version this package writes and reads.
const Version = 1

// Magic starts the decompressed content of every file.
const Magic = "NRIKIT-RECORD\n"

// Limits of what a file may hold, checked by [Reader] before it
// allocates for them; [Writer] keeps within them.
const (
	// MaxFrameSize bounds one encoded Header or Record.
	MaxFrameSize = 8 << 20
	// MaxValues bounds the values (see wirelimit.Limits) of one record's
	// message: room for a Synchronize part of MaxSyncPart large
	// containers.
	MaxValues = 1 << 20
	// MaxSyncPart is the number of pods and containers a SYNCHRONIZE or
	// STATE record holds at most; a larger snapshot is split.
	MaxSyncPart = 256
)

// Sources of a recording (Header.source).
const (
	// SourcePlugin: recorded by an NRI plugin (`nri record`).
	SourcePlugin = "plugin"
	// SourceRuntime: recorded by the runtime library, with every
	// plugin's answers.
	SourceRuntime = "runtime"
)

// syncMethod is the Plugin service's method whose request a SYNCHRONIZE
// or STATE record carries.
const syncMethod = "Synchronize"

// ErrFormat is wrapped by the errors about a file that is not a
// recording this package can read.
var ErrFormat = errors.New("record: not a valid recording")

// MessageType returns the protocol message type a record of kind k about
// event e carries: the request (REQUEST) or the response (ANSWER) of the
// Plugin service's method named after e, or the SynchronizeRequest
// (SYNCHRONIZE, STATE); nil for kinds without a message (REFUSAL,
// DROPPED) and for events the protocol does not define.
func MessageType(k recordpb.Kind, e api.Event) (protoreflect.MessageType, error) {
	var method string
	switch k {
	case recordpb.Kind_REQUEST, recordpb.Kind_ANSWER:
		if !e.IsValid() {
			return nil, fmt.Errorf("%w: %s record of %s", ErrFormat, k, e.Name())
		}
		method = e.Name()
	case recordpb.Kind_SYNCHRONIZE, recordpb.Kind_STATE:
		method = syncMethod
	case recordpb.Kind_REFUSAL, recordpb.Kind_DROPPED:
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: unknown record kind %d", ErrFormat, int32(k))
	}
	md := pluginService().Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil, fmt.Errorf("%w: the protocol has no method %s", ErrFormat, method)
	}
	desc := md.Input()
	if k == recordpb.Kind_ANSWER {
		desc = md.Output()
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(desc.FullName())
	if err != nil {
		return nil, fmt.Errorf("record: message type of %s: %w", method, err)
	}
	return mt, nil
}

// pluginService is the protocol's Plugin service, whose methods are
// named after the events.
func pluginService() protoreflect.ServiceDescriptor {
	return api.File_nrikit_nri_proto.Services().ByName("Plugin")
}
