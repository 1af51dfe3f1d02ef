package adaptation

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

// syncParts yields the Synchronize requests of one plugin, split as
// splitSync splits them. For a plugin at the other end of a connection
// (encodedSyncParts) the parts are encoded ahead, by a goroutine that encodes part k+1 while
// part k is in flight, so the runtime's encoding overlaps the plugin's
// decoding; and each pod and container is sized and encoded once, into
// a buffer that is the part's encoding as it goes on the wire (the
// request with the objects in its pods and containers fields, and more
// last): the request returned holds it as its unknown fields and nothing
// else, which the connection sends as they are (connEndpoint.Synchronize).
// Builtin plugins get the requests of splitSync (plainSyncParts).
type syncParts struct {
	// next returns the next part, whether more parts follow it, and
	// false after the last. The part returned before must no longer be
	// used: its buffer is reused.
	next func() (req *api.SynchronizeRequest, more, ok bool, err error)
	// stop ends the encoder early; it is idempotent and waits for it.
	stop func()
}

// plainSyncParts yields the requests of splitSync.
func plainSyncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *syncParts {
	return listedSyncParts(splitSync(pods, ctrs, limit))
}

// listedSyncParts yields parts, each but the last with More set.
func listedSyncParts(parts []*api.SynchronizeRequest) *syncParts {
	i := 0
	return &syncParts{
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

// encodedSyncParts yields the parts encoded ahead, by a goroutine that
// stop ends.
func encodedSyncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *syncParts {
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
	return &syncParts{
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
