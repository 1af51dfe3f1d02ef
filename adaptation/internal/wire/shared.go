package wire

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// The wire encoding of the runtime's requests is the endpoint's job: the
// dispatcher hands every endpoint the request itself, and the endpoint of
// a connected plugin encodes it while a builtin plugin's gets a clone.
// With the request comes the *Shared of its event: the requests of one
// event to several plugins have much in common (a notification is the
// same request for all of them; a CreateContainer the same pod), and the
// connected endpoints encode that once through it.

// Shared is what the requests of one event to its plugins have in
// common, encoded once by the first endpoint that needs the bytes. It is
// safe for concurrent use (a notification goes to every plugin at once).
// A nil *Shared shares nothing: the endpoint lets ttrpc encode the
// request.
type Shared struct {
	// maxCreate is the largest CreateContainerRequest encoding sent.
	maxCreate int
	// last is the encoding of the request sent last.
	last atomic.Pointer[encoding]
	// pod is the pod of the requests; podField its encoding as their
	// field 1, made by the second request with pod (the first encodes
	// the pod into its own buffer: an event to one plugin encodes it
	// once, into one buffer). podMu guards them.
	podMu    sync.Mutex
	pod      *api.PodSandbox
	podField []byte
}

// NewShared returns a Shared for one event whose CreateContainerRequests
// are refused above maxCreate bytes (see [Shared.Encode]).
func NewShared(maxCreate int) *Shared { return &Shared{maxCreate: maxCreate} }

// encoding is one request's encoding, made by the endpoint that sent the
// request first; the others wait for it (all woken at once).
type encoding struct {
	req  proto.Message
	made sync.WaitGroup // done once enc and err are set
	enc  []byte
	err  error
}

// Field numbers of the requests made of a pod and a container (see
// objects).
const (
	createPodField       = 1
	createContainerField = 2
)

// RequestSizeError is a request an endpoint did not send because its
// encoding, Size bytes, is above what NRI's message limit leaves for it
// (Limit). It is the runtime's failure, not the plugin's.
type RequestSizeError struct{ Size, Limit int }

// RequestSize returns the size of the request err refused, if err is a
// *[RequestSizeError].
func RequestSize(err error) (int, bool) {
	var tooLarge *RequestSizeError
	if errors.As(err, &tooLarge) {
		return tooLarge.Size, true
	}
	return 0, false
}

func (e *RequestSizeError) Error() string {
	return fmt.Sprintf("adaptation: the request is %d bytes, above NRI's message limit of %d", e.Size, e.Limit)
}

// Encode returns the bytes a connection sends for req: its encoding, made
// once for every send of the same request; nil if it cannot be encoded
// here (ttrpc then encodes req itself, or reports why not). A request
// made of a pod and a container (see objects) is encoded by hand, its
// pod once for the event; another with protobuf-go. The bytes are
// protobuf-go's encoding of req. It fails a CreateContainerRequest too
// large to send with a *[RequestSizeError].
//
// A CreateContainerRequest is the exception to "once for every send":
// each plugin gets its own (the container as the plugins before it left
// it), so it is encoded for the one call, into a recycled buffer, buf:
// the caller gives it back ([Buffer.Free]) when the call has returned.
// buf is nil for an encoding that is kept.
func (s *Shared) Encode(req proto.Message) (enc []byte, buf *Buffer, err error) {
	if s == nil || !req.ProtoReflect().IsValid() {
		return nil, nil, nil
	}
	if _, create := req.(*api.CreateContainerRequest); create {
		return s.encode(req, true)
	}
	e := s.last.Load()
	if e == nil || e.req != req {
		mine := &encoding{req: req}
		mine.made.Add(1)
		if s.last.CompareAndSwap(e, mine) {
			mine.enc, _, mine.err = s.encode(req, false)
			mine.made.Done()
			return mine.enc, nil, mine.err
		}
		if e = s.last.Load(); e.req != req {
			// Another request is being sent at the same time: not
			// one the event shares, so not kept.
			enc, _, err := s.encode(req, false)
			return enc, nil, err
		}
	}
	e.made.Wait()
	return e.enc, nil, e.err
}

// encode encodes req (see Encode), into a recycled buffer if pooled.
func (s *Shared) encode(req proto.Message, pooled bool) ([]byte, *Buffer, error) {
	pod, ctr, byHand := objects(req)
	if v, ok := req.(*api.ValidateContainerAdjustmentRequest); ok && !byHand {
		if enc, ok := s.encodeValidation(v); ok {
			return enc, nil, nil
		}
	}
	if !byHand {
		enc, err := proto.Marshal(req)
		if err != nil {
			return nil, nil, nil // ttrpc reports the error
		}
		return enc, nil, nil
	}
	enc, buf, err := s.appendObjects(pod, ctr, pooled)
	if err != nil {
		return nil, nil, nil
	}
	if _, create := req.(*api.CreateContainerRequest); create && len(enc) > s.maxCreate {
		buf.Free()
		return nil, nil, &RequestSizeError{Size: len(enc), Limit: s.maxCreate}
	}
	return enc, buf, nil
}

// encodeValidation encodes a validation request as protobuf-go does
// (byte for byte: fields in order of number): its pod and container, the
// bulk of it, by hand (fields 1 and 2, as appendObjects encodes those of
// the requests made of a pod and a container), the rest (the combined
// adjustment and updates, the owners, the plugins) with protobuf-go,
// appended. ok is false for a request with unknown fields, which
// protobuf-go encodes.
func (s *Shared) encodeValidation(v *api.ValidateContainerAdjustmentRequest) (enc []byte, ok bool) {
	if len(v.ProtoReflect().GetUnknown()) > 0 {
		return nil, false
	}
	enc, _, err := s.appendObjects(v.Pod, v.Container, false)
	if err != nil {
		return nil, false
	}
	rest := &api.ValidateContainerAdjustmentRequest{Adjust: v.Adjust, Update: v.Update, Owners: v.Owners, Plugins: v.Plugins}
	if enc, err = (proto.MarshalOptions{}).MarshalAppend(enc, rest); err != nil {
		return nil, false
	}
	return enc, true
}

// objects returns the pod and container of a request that is made of
// them alone (field 1 and, for container events, field 2; no unknown
// fields): those the connection encodes by hand.
func objects(req proto.Message) (*api.PodSandbox, *api.Container, bool) {
	var (
		pod *api.PodSandbox
		ctr *api.Container
	)
	switch x := req.(type) {
	case *api.CreateContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.PostCreateContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.StartContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.PostStartContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.PostUpdateContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.StopContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.RemoveContainerRequest:
		pod, ctr = x.Pod, x.Container
	case *api.RunPodSandboxRequest:
		pod = x.Pod
	case *api.PostUpdatePodSandboxRequest:
		pod = x.Pod
	case *api.StopPodSandboxRequest:
		pod = x.Pod
	case *api.RemovePodSandboxRequest:
		pod = x.Pod
	default:
		return nil, nil, false
	}
	if !req.ProtoReflect().IsValid() || len(req.ProtoReflect().GetUnknown()) > 0 {
		return nil, nil, false
	}
	return pod, ctr, true
}

// appendObjects encodes a request of pod (field 1) and ctr (field 2),
// into a recycled buffer (buf) if pooled: the pod, the same for every
// plugin, once for the event (see podEncoding); the container, which
// changes from plugin to plugin in a CreateContainer, for each request
// (both by hand, see encodedSize).
func (s *Shared) appendObjects(pod *api.PodSandbox, ctr *api.Container, pooled bool) (enc []byte, buf *Buffer, err error) {
	podField, podSize := s.podEncoding(pod)
	n := len(podField)
	if pod != nil && podField == nil {
		n = fieldSize(podSize)
	}
	ctrSize := 0
	if ctr != nil {
		ctrSize = encodedSize(ctr)
		n += fieldSize(ctrSize)
	}
	if pooled {
		buf = getBuffer(n)
		enc = buf.b
	} else {
		enc = make([]byte, 0, n)
	}
	enc = append(enc, podField...)
	if pod != nil && podField == nil {
		enc, err = appendField(enc, createPodField, pod, podSize)
	}
	if err == nil && ctr != nil {
		enc, err = appendField(enc, createContainerField, ctr, ctrSize)
	}
	if err != nil {
		buf.Free()
		return nil, nil, err
	}
	if buf != nil {
		buf.b = enc
	}
	return enc, buf, nil
}

// podEncoding returns the encoding of pod as field 1 if it was made for
// the event, or nil and the size of pod's encoding for the request to
// encode the pod itself: the first request with pod does (an event to
// one plugin encodes it once, into its one buffer); the second makes
// podField, which the others copy. A new pod starts over.
func (s *Shared) podEncoding(pod *api.PodSandbox) (field []byte, size int) {
	if pod == nil {
		return nil, 0
	}
	s.podMu.Lock()
	defer s.podMu.Unlock()
	if s.pod != pod {
		s.pod, s.podField = pod, nil
		return nil, encodedSize(pod)
	}
	if s.podField == nil {
		size = encodedSize(pod)
		enc, err := appendField(make([]byte, 0, fieldSize(size)), createPodField, pod, size)
		if err != nil {
			return nil, size // the request fails to encode it too
		}
		s.podField = enc
	}
	return s.podField, 0
}
