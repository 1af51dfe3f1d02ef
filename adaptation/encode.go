package adaptation

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastencode"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The wire encoding of the runtime's requests is the endpoint's job: the
// dispatcher (dispatch.go) hands every endpoint the request itself, and
// the endpoint of a connected plugin encodes it (connEndpoint.call)
// while a builtin plugin's gets a clone (builtinEndpoint.call). With the
// request comes the *shared of its event: the requests of one event to
// several plugins have much in common (a notification is the same
// request for all of them; a CreateContainer the same pod), and the
// connected endpoints encode that once through it.

// shared is what the requests of one event to its plugins have in
// common, encoded once by the first endpoint that needs the bytes. It is
// safe for concurrent use (a notification goes to every plugin at once).
// A nil *shared shares nothing: the endpoint lets ttrpc encode the request.
type shared struct {
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

// requestSizeError is a request an endpoint did not send because its
// encoding, size bytes, is above what NRI's message limit leaves for it
// (maxRequestPayload). It is the runtime's failure, not the plugin's.
type requestSizeError struct{ size int }

// requestSize returns the size of the request err refused, if err is a
// *requestSizeError.
func requestSize(err error) (int, bool) {
	var tooLarge *requestSizeError
	if errors.As(err, &tooLarge) {
		return tooLarge.size, true
	}
	return 0, false
}

func (e *requestSizeError) Error() string {
	return fmt.Sprintf("adaptation: the request is %d bytes, above NRI's message limit of %d", e.size, maxRequestPayload)
}

// wire returns the bytes a connection sends for req: its encoding, made
// once for every send of the same request; nil if it cannot be encoded
// here (ttrpc then encodes req itself, or reports why not). A request
// made of a pod and a container (see objects) is encoded by hand, its
// pod once for the event; another with protobuf-go. It fails a
// CreateContainerRequest too large to send with a *requestSizeError.
//
// A CreateContainerRequest is the exception to "once for every send":
// each plugin gets its own (the container as the plugins before it left
// it, see Adaptation.CreateContainer), so it is encoded for the one call,
// into a recycled buffer, buf: the caller gives it back (buf.free) when
// the call has returned. buf is nil for an encoding that is kept.
func (s *shared) wire(req proto.Message) (enc []byte, buf *encodeBuf, err error) {
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

// encode encodes req (see wire), into a recycled buffer if pooled.
func (s *shared) encode(req proto.Message, pooled bool) ([]byte, *encodeBuf, error) {
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
	if _, create := req.(*api.CreateContainerRequest); create && len(enc) > maxRequestPayload {
		buf.free()
		return nil, nil, &requestSizeError{size: len(enc)}
	}
	return enc, buf, nil
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
func (s *shared) appendObjects(pod *api.PodSandbox, ctr *api.Container, pooled bool) (enc []byte, buf *encodeBuf, err error) {
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
		buf = getEncodeBuf(n)
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
		buf.free()
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
func (s *shared) podEncoding(pod *api.PodSandbox) (field []byte, size int) {
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

// encodeBuf is a buffer a request is encoded into for one call (see
// shared.wire), recycled through encodeBufs once the call has returned.
type encodeBuf struct{ b []byte }

// maxPooledEncoding bounds the buffers kept for reuse: one huge request
// does not pin its buffer's memory.
const maxPooledEncoding = 64 << 10

// encodeBufs holds the encodeBufs given back (free).
var encodeBufs sync.Pool

// getEncodeBuf returns an empty buffer with room for n bytes, a recycled
// one if n is within maxPooledEncoding. Capacities are powers of two (1
// KiB at least), so that the requests of an event, which grow a little
// from plugin to plugin, find room in the buffer of the one before.
func getEncodeBuf(n int) *encodeBuf {
	if n > maxPooledEncoding {
		return &encodeBuf{b: make([]byte, 0, n)}
	}
	eb, _ := encodeBufs.Get().(*encodeBuf)
	if eb == nil {
		eb = &encodeBuf{}
	}
	if cap(eb.b) < n {
		eb.b = make([]byte, 0, max(1<<bits.Len(uint(n-1)), 1<<10))
	}
	eb.b = eb.b[:0]
	return eb
}

// free gives eb back for reuse, unless it is above maxPooledEncoding
// (or nil). Nothing may use eb or its bytes afterwards.
func (eb *encodeBuf) free() {
	if eb == nil || cap(eb.b) > maxPooledEncoding {
		return
	}
	encodeBufs.Put(eb)
}

// appendField appends m as field num of a message (tag, length, bytes)
// to b, to be sent in place of a message with m in that field (see
// shared.wire); n is encodedSize(m), computed just before (m unchanged
// since, see appendEncoded). On error b is returned unchanged.
func appendField(b []byte, num protowire.Number, m proto.Message, n int) ([]byte, error) {
	out := slices.Grow(b, protowire.SizeTag(num)+protowire.SizeVarint(uint64(n))+n)
	out = protowire.AppendTag(out, num, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(n))
	out, err := appendEncoded(out, m)
	if err != nil {
		return b, err
	}
	return out, nil
}

// encodedSize is the size of m's encoding: pods and containers, most of
// a Synchronize, are sized and encoded by hand (internal/fastencode),
// which produces protobuf-go's encoding several times faster.
func encodedSize(m proto.Message) int {
	switch x := m.(type) {
	case *api.PodSandbox:
		return fastencode.SizePod(x)
	case *api.Container:
		return fastencode.SizeContainer(x)
	}
	return proto.Size(m)
}

// appendEncoded appends m's encoding, encodedSize(m) bytes, to b. The
// size was just computed (encodedSize): the encoders use the sizes it
// cached for what protobuf-go encodes.
func appendEncoded(b []byte, m proto.Message) ([]byte, error) {
	switch x := m.(type) {
	case *api.PodSandbox:
		return fastencode.AppendSizedPod(b, x)
	case *api.Container:
		return fastencode.AppendSizedContainer(b, x)
	}
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}
