package wire

import (
	"fmt"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of SynchronizeRequest.
const (
	syncPodsField       protowire.Number = 1
	syncContainersField protowire.Number = 2
	syncMoreField       protowire.Number = 3
)

// SplitSync splits pods and containers into Synchronize requests whose
// encoded size does not exceed limit bytes, pods first. Every request
// but the last has More set. An object too large for a request on its
// own travels alone. There is always at least one request.
func SplitSync(pods []*api.PodSandbox, ctrs []*api.Container, limit int) []*api.SynchronizeRequest {
	// Room for "more = true" (tag and a one-byte varint).
	budget := limit - 2
	var (
		parts = []*api.SynchronizeRequest{{}}
		size  int
	)
	fit := func(n int) *api.SynchronizeRequest {
		cur := parts[len(parts)-1]
		if size > 0 && size+n > budget {
			cur.More = true
			cur = &api.SynchronizeRequest{}
			parts = append(parts, cur)
			size = 0
		}
		size += n
		return cur
	}
	for _, p := range pods {
		cur := fit(fieldSize(proto.Size(p)))
		cur.Pods = append(cur.Pods, p)
	}
	for _, c := range ctrs {
		cur := fit(fieldSize(proto.Size(c)))
		cur.Containers = append(cur.Containers, c)
	}
	return parts
}

// SyncParts yields the Synchronize requests of one plugin, split as
// [SplitSync] splits them. For a plugin at the other end of a connection
// ([EncodedSyncParts]) the parts are encoded ahead, by a goroutine that
// encodes part k+1 while part k is in flight, so the runtime's encoding
// overlaps the plugin's decoding; and each pod and container is sized
// and encoded once, into a buffer that is the part's encoding as it goes
// on the wire (the request with the objects in its pods and containers
// fields, and more last): the request returned holds it as its unknown
// fields and nothing else, which the connection sends as they are (see
// [OwnEncoding]). Builtin plugins get the requests of SplitSync
// ([PlainSyncParts]).
type SyncParts struct {
	next func() (req *api.SynchronizeRequest, more, ok bool, err error)
	stop func()
}

// Next returns the next part, whether more parts follow it, and false
// after the last. The part returned before must no longer be used: its
// buffer is reused.
func (p *SyncParts) Next() (req *api.SynchronizeRequest, more, ok bool, err error) { return p.next() }

// Stop ends the encoder early; it is idempotent and waits for it. It
// must be called once the parts are no longer needed.
func (p *SyncParts) Stop() { p.stop() }

// PlainSyncParts yields the requests of SplitSync.
func PlainSyncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *SyncParts {
	return ListedSyncParts(SplitSync(pods, ctrs, limit))
}

// ListedSyncParts yields parts as they are, a part's More saying whether
// more follow.
func ListedSyncParts(parts []*api.SynchronizeRequest) *SyncParts {
	i := 0
	return &SyncParts{
		next: func() (*api.SynchronizeRequest, bool, bool, error) {
			if i == len(parts) {
				return nil, false, false, nil
			}
			i++
			return parts[i-1], parts[i-1].More, true, nil
		},
		stop: func() {},
	}
}

// EncodedSyncParts yields the parts of SplitSync encoded ahead, by a
// goroutine that Stop ends.
func EncodedSyncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *SyncParts {
	type part struct {
		req  *api.SynchronizeRequest
		more bool
		err  error
	}
	out := make(chan part, 1) // one part encoded ahead
	// free takes back the buffers of parts that were sent, for the
	// encoder to reuse (ttrpc has copied them into its message by then).
	free := make(chan []byte, 2)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		budget := limit - 2 // room for "more = true"
		var buf []byte
		emit := func(more bool) bool {
			if more {
				buf = protowire.AppendTag(buf, syncMoreField, protowire.VarintType)
				buf = protowire.AppendVarint(buf, 1)
			}
			req := &api.SynchronizeRequest{}
			req.ProtoReflect().SetUnknown(buf)
			buf = nil
			select {
			case out <- part{req: req, more: more}:
				return true
			case <-quit:
				return false
			}
		}
		add := func(num protowire.Number, m proto.Message) bool {
			n := encodedSize(m)
			f := protowire.SizeTag(num) + protowire.SizeVarint(uint64(n)) + n
			if len(buf) > 0 && len(buf)+f > budget {
				if !emit(true) {
					return false
				}
			}
			if buf == nil {
				select {
				case buf = <-free:
				default:
					buf = make([]byte, 0, min(max(f, 4096), limit))
				}
			}
			var err error
			if buf, err = appendField(buf, num, m, n); err != nil {
				select {
				case out <- part{err: fmt.Errorf("encoding Synchronize: %w", err)}:
				case <-quit:
				}
				return false
			}
			return true
		}
		for _, p := range pods {
			if !add(syncPodsField, p) {
				return
			}
		}
		for _, c := range ctrs {
			if !add(syncContainersField, c) {
				return
			}
		}
		emit(false)
	}()
	var (
		stopped bool
		prev    *api.SynchronizeRequest
	)
	return &SyncParts{
		next: func() (*api.SynchronizeRequest, bool, bool, error) {
			// Asking for the next part means the previous one was sent.
			if prev != nil {
				select {
				case free <- prev.ProtoReflect().GetUnknown()[:0]:
				default:
				}
			}
			p, ok := <-out
			prev = p.req
			return p.req, p.more, ok, p.err
		},
		stop: func() {
			if !stopped {
				stopped = true
				close(quit)
			}
			<-done
		},
	}
}
