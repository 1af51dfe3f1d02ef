package wirelimit

import (
	"sync"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The limits of the NRI messages a runtime decodes from a plugin: its
// answers to the Plugin service and its Runtime service requests.
const (
	// MaxUpdates bounds the container updates one message holds (the
	// update field of an answer or of UpdateContainersRequest).
	MaxUpdates = 1024
	// MaxEvictions bounds the container evictions one message holds.
	MaxEvictions = 1024
	// MaxValues bounds the values (see [Limits]) one message holds: room
	// for MaxUpdates updates of 32 values each (an update that sets every
	// memory, CPU and pids resource is about 25).
	MaxValues = 32 << 10
	// MaxEnvelopeValues bounds the values of ttrpc's envelope around a
	// message (the Request's metadata, the Response's status and its
	// details): NRI's peers send at most a few.
	MaxEnvelopeValues = 1024
)

// Schemas of the messages of NRI's services, by method name, and of
// ttrpc's envelopes. They are compiled on first use, not at package
// initialisation (about 260 KB in 1,700 allocations): a runtime without
// plugins never needs them.
var (
	answers          = sync.OnceValue(func() map[string]*Schema { return serviceSchemas("Plugin", protoreflect.MethodDescriptor.Output) })
	requests         = sync.OnceValue(func() map[string]*Schema { return serviceSchemas("Runtime", protoreflect.MethodDescriptor.Input) })
	requestEnvelope  = sync.OnceValue(func() *Schema { return envelope(&ttrpc.Request{}) })
	responseEnvelope = sync.OnceValue(func() *Schema { return envelope(&ttrpc.Response{}) })
)

func envelope(m protoreflect.ProtoMessage) *Schema {
	return Compile(m.ProtoReflect().Descriptor(), Limits{Values: MaxEnvelopeValues})
}

// Answer returns the schema of the answer to the Plugin service method
// named method ("CreateContainer", "Synchronize", ...), nil for an
// unknown method.
func Answer(method string) *Schema { return answers()[method] }

// Request returns the schema of the request of the Runtime service method
// named method ("RegisterPlugin", "UpdateContainers"), nil for an unknown
// method.
func Request(method string) *Schema { return requests()[method] }

// RequestEnvelope is the schema of ttrpc's Request, whose payload (the
// method's request) it does not look into.
func RequestEnvelope() *Schema { return requestEnvelope() }

// ResponseEnvelope is the schema of ttrpc's Response, whose payload it
// does not look into.
func ResponseEnvelope() *Schema { return responseEnvelope() }

// serviceSchemas compiles the message msg returns for each method of the
// NRI service named service, with MaxValues and its update and eviction
// fields capped.
func serviceSchemas(service protoreflect.Name, msg func(protoreflect.MethodDescriptor) protoreflect.MessageDescriptor) map[string]*Schema {
	updateType := (&api.ContainerUpdate{}).ProtoReflect().Descriptor().FullName()
	evictionType := (&api.ContainerEviction{}).ProtoReflect().Descriptor().FullName()
	methods := api.File_nrikit_nri_proto.Services().ByName(service).Methods()
	out := make(map[string]*Schema, methods.Len())
	for i := range methods.Len() {
		md := msg(methods.Get(i))
		lim := Limits{Values: MaxValues, Fields: map[protoreflect.FullName]int{}}
		fields := md.Fields()
		for j := range fields.Len() {
			fd := fields.Get(j)
			if !fd.IsList() || fd.Message() == nil {
				continue
			}
			switch fd.Message().FullName() {
			case updateType:
				lim.Fields[fd.FullName()] = MaxUpdates
			case evictionType:
				lim.Fields[fd.FullName()] = MaxEvictions
			}
		}
		out[string(methods.Get(i).Name())] = Compile(md, lim)
	}
	return out
}
