package adaptation

import (
	"errors"
	"fmt"
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
	// pod is the pod of the requests, podField its encoding as their
	// field 1; podMu guards them.
	podMu    sync.Mutex
	pod      *api.PodSandbox
	podField []byte
}

// encoding is one request's encoding, made by the endpoint that sent the
// request first; the others wait for it (all woken at once).
type encoding struct {
	req  proto.Message
	made sync.WaitGroup // done once msg and err are set
	msg  proto.Message
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

// wire returns the message a connection's ttrpc client marshals for req:
// a carrier of its encoding (see carrier), made once for every send of
// the same request; req itself if it cannot be encoded here (ttrpc then
// encodes it, or reports why not). A request made of a pod and a
// container (see objects) is encoded by hand, its pod once for the event;
// another with protobuf-go. It fails a CreateContainerRequest too large
// to send with a *requestSizeError.
func (s *shared) wire(req proto.Message) (proto.Message, error) {
	if s == nil || !req.ProtoReflect().IsValid() {
		return req, nil
	}
	e := s.last.Load()
	if e == nil || e.req != req {
		mine := &encoding{req: req}
		mine.made.Add(1)
		if s.last.CompareAndSwap(e, mine) {
			mine.msg, mine.err = s.encode(req)
			mine.made.Done()
			return mine.msg, mine.err
		}
		if e = s.last.Load(); e.req != req {
			// Another request is being sent at the same time: not
			// one the event shares, so not kept.
			return s.encode(req)
		}
	}
	e.made.Wait()
	return e.msg, e.err
}

// encode encodes req (see wire).
func (s *shared) encode(req proto.Message) (proto.Message, error) {
	pod, ctr, byHand := objects(req)
	if !byHand {
		buf, err := proto.Marshal(req)
		if err != nil {
			return req, nil
		}
		return carrier(buf), nil
	}
	buf, err := s.appendObjects(pod, ctr)
	if err != nil {
		return req, nil
	}
	if _, create := req.(*api.CreateContainerRequest); create && len(buf) > maxRequestPayload {
		return nil, &requestSizeError{size: len(buf)}
	}
	return carrier(buf), nil
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

// appendObjects encodes a request of pod (field 1) and ctr (field 2): the
// pod, the same for every plugin, once per event; the container, which
// changes from plugin to plugin in a CreateContainer, for each request
// (both by hand, see encodedSize).
func (s *shared) appendObjects(pod *api.PodSandbox, ctr *api.Container) ([]byte, error) {
	var podField []byte
	if pod != nil {
		s.podMu.Lock()
		if s.pod != pod || s.podField == nil {
			enc, err := appendField(nil, createPodField, pod, encodedSize(pod))
			if err != nil {
				s.podMu.Unlock()
				return nil, err
			}
			s.pod, s.podField = pod, enc
		}
		podField = s.podField
		s.podMu.Unlock()
	}
	if ctr == nil {
		return slices.Clone(podField), nil
	}
	// Clipped, podField is copied into a buffer of the right size.
	return appendField(slices.Clip(podField), createContainerField, ctr, encodedSize(ctr))
}

// carrier returns a message that marshals to buf: an empty message with
// buf as its unknown fields, which proto.Marshal (and so ttrpc) copies to
// the wire as they are. It is how a connection hands its ttrpc client
// bytes it encoded itself; it never leaves the connection.
func carrier(buf []byte) proto.Message {
	m := &api.Empty{}
	m.ProtoReflect().SetUnknown(buf)
	return m
}

// appendField appends m as field num of a message (tag, length, bytes)
// to b, to be set as unknown fields of a message sent in place of one
// with m in that field (see carrier); n is encodedSize(m). On error b
// is returned unchanged.
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

// appendEncoded appends m's encoding, encodedSize(m) bytes, to b.
func appendEncoded(b []byte, m proto.Message) ([]byte, error) {
	switch x := m.(type) {
	case *api.PodSandbox:
		return fastencode.AppendPod(b, x)
	case *api.Container:
		return fastencode.AppendContainer(b, x)
	}
	// The size was just computed: marshal with it.
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}
