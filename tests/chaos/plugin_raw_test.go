package chaos

// The hostile plugin modes: "raw" speaks the protocol directly with mux,
// ttrpc and api (as helper_plugin_test.go of package adaptation does) and
// misbehaves as told by -behave; "unopened" sends frames for connection
// IDs NRI never opens.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// rawPlugin is the hostile plugin. Whatever it does, it reports on
// stdout: "REGISTER ok" or "REGISTER error code=... len=... msg=...",
// "SYNCPART n ...", "EVENT CreateContainer pod ctr", "FLOOD ...".
type rawPlugin struct {
	name, idx   string
	version     string
	behave      string
	events      api.EventMask
	namespaces  string
	failRequest bool
	syncDelay   time.Duration
	flood       int
	floodID     int
	answer      *api.ContainerAdjustment // CreateContainer's adjustment
	answerRaw   []byte                   // CreateContainer's answer, encoded (-behave bloat)
	bloat       int                      // concurrent UpdateContainers callers (-behave bloat)
	bloatEmpty  bool                     // bloat with empty entries only (-behave bloat)

	parts    atomic.Int32
	synced   chan struct{} // closed when the last Synchronize part arrived
	syncOnce sync.Once
}

// trunkConn is a raw plugin's socket, which it can stop reading: once
// stalled, Read blocks until the connection is closed.
type trunkConn struct {
	net.Conn
	stalled atomic.Bool
	closed  chan struct{}
	once    sync.Once
}

func (c *trunkConn) Read(p []byte) (int, error) {
	if c.stalled.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

func (c *trunkConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func runRaw(args []string) error {
	fs := flag.NewFlagSet("raw", flag.ContinueOnError)
	r := &rawPlugin{synced: make(chan struct{})}
	socket := fs.String("socket", "", "runtime socket")
	fs.StringVar(&r.name, "name", "", "plugin name")
	fs.StringVar(&r.idx, "idx", "", "plugin index")
	fs.StringVar(&r.version, "version", "chaos", "NRI version to announce")
	fs.StringVar(&r.behave, "behave", "", "stall: stop reading the socket after registering; "+
		"flood: pipeline -flood UpdateContainers requests and never read an answer; "+
		"leave: disconnect once synchronized; "+
		"bloat: answer CreateContainer, and send UpdateContainers from -bloat callers without pause, with messages that decode into as much as the runtime's bounds allow; "+
		"otherwise serve until disconnected")
	events := fs.String("events", "CreateContainer", "events to subscribe to")
	fs.StringVar(&r.namespaces, "namespaces", "", "comma-separated pod namespaces of the plugin's scope (default: all)")
	fs.BoolVar(&r.failRequest, "fail-request", false, "failure policy fail_request")
	fs.DurationVar(&r.syncDelay, "sync-delay", 0, "delay before answering each Synchronize part")
	fs.IntVar(&r.flood, "flood", 20000, "UpdateContainers requests to send with -behave flood")
	fs.IntVar(&r.floodID, "flood-id-bytes", 64, "length of the container IDs in the flood")
	answerBytes := fs.Int("answer-bytes", 0, "size of the CreateContainer adjustment (environment variables)")
	fs.IntVar(&r.bloat, "bloat", 4, "concurrent UpdateContainers callers with -behave bloat")
	fs.BoolVar(&r.bloatEmpty, "bloat-empty", false, "with -behave bloat, send messages of empty updates only, "+
		"beyond the runtime's bounds (the attack of issue 23)")
	nameBytes := fs.Int("name-bytes", 0, "register with a name of this many bytes instead of -name")
	idxBytes := fs.Int("idx-bytes", 0, "register with an index of this many bytes instead of -idx")
	versionBytes := fs.Int("version-bytes", 0, "announce an NRI version of this many bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if r.events, err = api.ParseEventMask(*events); err != nil {
		return err
	}
	if *nameBytes > 0 {
		r.name = strings.Repeat("n", *nameBytes)
	}
	if *idxBytes > 0 {
		r.idx = strings.Repeat("1", *idxBytes)
	}
	if *versionBytes > 0 {
		r.version = strings.Repeat("v", *versionBytes)
	}
	if *answerBytes > 0 {
		r.answer = bigAdjustment(*answerBytes)
		say("ANSWER bytes=%d", proto.Size(r.answer))
	}
	if r.behave == "bloat" {
		r.answerRaw = bloatedAdjustment(adaptation.MaxMessageSize - 64<<10)
		if r.bloatEmpty {
			r.answerRaw = emptyFields(2, (adaptation.MaxMessageSize-64<<10)/2)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conn, err := net.Dial("unix", *socket)
	if err != nil {
		return err
	}
	trunk := &trunkConn{Conn: conn, closed: make(chan struct{})}
	m, err := mux.New(trunk)
	if err != nil {
		return err
	}
	defer m.Close()
	l, err := m.Listen(mux.PluginServiceConn)
	if err != nil {
		return err
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	api.RegisterPluginService(srv, r)
	go srv.Serve(ctx, l)
	rc, err := m.Open(mux.RuntimeServiceConn)
	if err != nil {
		return err
	}
	req := &api.RegisterPluginRequest{PluginName: r.name, PluginIdx: r.idx, NRIVersion: r.version}
	if r.behave == "flood" {
		return r.floodUpdates(m, rc, req)
	}
	rt := api.NewRuntimeClient(ttrpc.NewClient(rc))
	if _, err := rt.RegisterPlugin(ctx, req); err != nil {
		st := status.Convert(err)
		say("REGISTER error code=%s len=%d msg=%s", st.Code(), len(st.Message()), boundedQuote(st.Message()))
		return nil
	}
	say("REGISTER ok")
	switch r.behave {
	case "bloat":
		return r.bloatUpdates(ctx, m, rt)
	case "stall":
		trunk.stalled.Store(true)
		say("STALLED")
	case "leave":
		select {
		case <-r.synced:
		case <-ctx.Done():
			return errors.New("not synchronized")
		}
		time.Sleep(50 * time.Millisecond) // let the last answer leave
		say("LEAVING")
		return nil
	}
	<-m.Done()
	say("CLOSED %v", m.Err())
	return nil
}

// boundedQuote quotes s, cut to 2 KiB.
func boundedQuote(s string) string {
	if len(s) > 2048 {
		return strconv.Quote(s[:2048]) + "..."
	}
	return strconv.Quote(s)
}

// bigAdjustment returns an adjustment of about size encoded bytes:
// environment variables of 1000 bytes.
func bigAdjustment(size int) *api.ContainerAdjustment {
	adj := &api.ContainerAdjustment{}
	value := strings.Repeat("v", 1000)
	for n := 0; n < size; {
		kv := &api.KeyValue{Key: fmt.Sprintf("BIG%d", len(adj.Env)), Value: value}
		adj.Env = append(adj.Env, kv)
		n += proto.Size(kv) + 3 // the entry's tag and length
	}
	return adj
}

// The ttrpc wire format, for the flood: a 10-byte header (length,
// stream ID, type, flags) and a ttrpc.Request or ttrpc.Response.
const (
	ttrpcHeaderSize  = 10
	ttrpcRequest     = 1
	runtimeService   = "nri.pkg.api.v1alpha1.Runtime"
	ttrpcMaxResponse = 4 << 20
)

// requestMessage encodes a ttrpc request of the Runtime service.
func requestMessage(sid uint32, method string, msg proto.Message) ([]byte, error) {
	payload, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	body, err := proto.Marshal(&ttrpc.Request{Service: runtimeService, Method: method, Payload: payload})
	if err != nil {
		return nil, err
	}
	b := make([]byte, ttrpcHeaderSize, ttrpcHeaderSize+len(body))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(body)))
	binary.BigEndian.PutUint32(b[4:8], sid)
	b[8] = ttrpcRequest
	return append(b, body...), nil
}

// readResponse reads one ttrpc message from r and decodes it as a
// response.
func readResponse(r io.Reader) (*ttrpc.Response, error) {
	var hdr [ttrpcHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[0:4])
	if n > ttrpcMaxResponse {
		return nil, fmt.Errorf("response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	rsp := &ttrpc.Response{}
	return rsp, proto.Unmarshal(body, rsp)
}

// floodUpdates registers by hand over rc (the Runtime service's
// connection), then, once synchronized, writes r.flood UpdateContainers
// requests without ever reading rc again.
func (r *rawPlugin) floodUpdates(m *mux.Mux, rc net.Conn, req *api.RegisterPluginRequest) error {
	msg, err := requestMessage(1, "RegisterPlugin", req)
	if err != nil {
		return err
	}
	if _, err := rc.Write(msg); err != nil {
		return err
	}
	rsp, err := readResponse(rc)
	if err != nil {
		return err
	}
	if st := rsp.GetStatus(); st.GetCode() != 0 {
		say("REGISTER error code=%d len=%d msg=%s", st.GetCode(), len(st.GetMessage()), boundedQuote(st.GetMessage()))
		return nil
	}
	say("REGISTER ok")
	select {
	case <-r.synced:
	case <-time.After(hangGuard):
		return errors.New("not synchronized")
	}
	say("FLOOD start")
	var (
		buf     []byte
		sid     = uint32(3)
		written int
	)
	for i := 0; i < r.flood && err == nil; i++ {
		id := fmt.Sprintf("flood%d-", i)
		id += strings.Repeat("x", max(0, r.floodID-len(id)))
		msg, err = requestMessage(sid, "UpdateContainers", &api.UpdateContainersRequest{
			Update: []*api.ContainerUpdate{{ContainerId: id}},
		})
		if err != nil {
			return err
		}
		sid += 2
		buf = append(buf, msg...)
		if len(buf) >= 64<<10 || i == r.flood-1 {
			if _, err = rc.Write(buf); err == nil {
				written = i + 1
			}
			buf = buf[:0]
		}
	}
	say("FLOOD written=%d error=%v", written, err)
	<-m.Done()
	say("CLOSED %v", m.Err())
	return nil
}

func (r *rawPlugin) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	say("CONFIGURE")
	rsp := &api.ConfigureResponse{Events: int32(r.events)}
	if r.failRequest {
		rsp.FailurePolicy = &api.FailurePolicy{FailRequest: true}
	}
	if r.namespaces != "" {
		rsp.Scope = &api.PluginScope{Namespaces: strings.Split(r.namespaces, ",")}
	}
	return rsp, nil
}

func (r *rawPlugin) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	n := r.parts.Add(1)
	say("SYNCPART %d pods=%d containers=%d more=%v", n, len(req.Pods), len(req.Containers), req.More)
	time.Sleep(r.syncDelay)
	if !req.More {
		r.syncOnce.Do(func() { close(r.synced) })
	}
	return &api.SynchronizeResponse{More: req.More}, nil
}

func (r *rawPlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	say("SHUTDOWN")
	return &api.Empty{}, nil
}

func (r *rawPlugin) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	say("EVENT CreateContainer %s %s", req.GetPod().GetId(), req.GetContainer().GetId())
	rsp := &api.CreateContainerResponse{Adjust: r.answer}
	if r.answerRaw != nil {
		rsp.ProtoReflect().SetUnknown(r.answerRaw)
	}
	return rsp, nil
}

// The other events are not subscribed to.

func (r *rawPlugin) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, nil
}

func (r *rawPlugin) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return &api.UpdatePodSandboxResponse{}, nil
}

func (r *rawPlugin) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, nil
}

func (r *rawPlugin) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, nil
}

func (r *rawPlugin) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, nil
}

func (r *rawPlugin) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, nil
}

func (r *rawPlugin) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, nil
}

func (r *rawPlugin) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, nil
}

func (r *rawPlugin) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return &api.UpdateContainerResponse{}, nil
}

func (r *rawPlugin) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, nil
}

func (r *rawPlugin) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return &api.StopContainerResponse{}, nil
}

func (r *rawPlugin) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, nil
}

func (r *rawPlugin) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func (r *rawPlugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

// runUnopened opens -conns connections and sends on each, as fast as the
// runtime takes them, -frames frames of -size bytes for the connection
// IDs -ids in turn, then reports per connection whether the runtime
// closed it ("UNOPENED conn=N sent=BYTES closed=true ...").
func runUnopened(args []string) error {
	fs := flag.NewFlagSet("unopened", flag.ContinueOnError)
	socket := fs.String("socket", "", "runtime socket")
	conns := fs.Int("conns", 4, "connections")
	frames := fs.Int("frames", 255, "frames per connection")
	size := fs.Int("size", 4<<20, "payload bytes per frame")
	idList := fs.String("ids", "3,4", "connection IDs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ids []uint32
	for _, s := range strings.Split(*idList, ",") {
		id, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return err
		}
		ids = append(ids, uint32(id))
	}
	payload := make([]byte, *size)
	var wg sync.WaitGroup
	for c := range *conns {
		wg.Go(func() {
			conn, err := net.Dial("unix", *socket)
			if err != nil {
				say("UNOPENED conn=%d dial error %v", c, err)
				return
			}
			defer conn.Close()
			var (
				hdr  [mux.HeaderSize]byte
				sent int
				werr error
			)
			for f := 0; f < *frames && werr == nil; f++ {
				binary.BigEndian.PutUint32(hdr[0:4], ids[f%len(ids)])
				binary.BigEndian.PutUint32(hdr[4:8], uint32(*size))
				var n int
				if n, werr = conn.Write(hdr[:]); werr == nil {
					n, werr = conn.Write(payload)
				}
				sent += n
			}
			// Closed by the runtime: the write failed, or a read sees the end.
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, rerr := conn.Read(make([]byte, 1))
			closed := werr != nil || errors.Is(rerr, io.EOF) || errors.Is(rerr, net.ErrClosed) ||
				strings.Contains(fmt.Sprint(rerr), "reset")
			say("UNOPENED conn=%d sent=%d closed=%v write=%v read=%v", c, sent, closed, werr, rerr)
		})
	}
	wg.Wait()
	return nil
}

// emptyFields returns n occurrences of field num holding an empty
// message.
func emptyFields(num protowire.Number, n int) []byte {
	return bytes.Repeat(protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), nil), n)
}

// padFields appends unknown fields (3 bytes each) to b up to size bytes.
func padFields(b []byte, size int) []byte {
	one := protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 0)
	for len(b)+len(one) <= size {
		b = append(b, one...)
	}
	return b
}

// bloatedAdjustment returns the encoding of a CreateContainerResponse of
// size bytes that decodes into as much as the runtime's bounds allow
// (internal/wirelimit's TestDecodedWorstCase: empty prestart hooks up to
// MaxMessageValues, then unknown fields; hooks, unlike mounts, do not
// conflict between plugins).
func bloatedAdjustment(size int) []byte {
	prestart := emptyFields(1, adaptation.MaxMessageValues-2)
	hooks := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), prestart)
	adjust := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), hooks)
	return padFields(adjust, size)
}

// bloatedUpdates returns the encoding of an UpdateContainersRequest of
// size bytes within the runtime's bounds: MaxUpdatesPerMessage updates of
// containers the runtime does not know (so none is applied), each with
// 28 empty device entries, then unknown fields.
func bloatedUpdates(size int) []byte {
	var b []byte
	devices := emptyFields(7, (adaptation.MaxMessageValues-4*adaptation.MaxUpdatesPerMessage)/adaptation.MaxUpdatesPerMessage)
	for i := range adaptation.MaxUpdatesPerMessage {
		u := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), fmt.Sprint("bloat-", i))
		resources := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), devices)
		u = protowire.AppendBytes(protowire.AppendTag(u, 2, protowire.BytesType), resources)
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), u)
	}
	return padFields(b, size)
}

// bloatUpdates sends UpdateContainers from r.bloat callers, without
// pause, until the connection closes; every 16 answers it says "BLOAT n".
func (r *rawPlugin) bloatUpdates(ctx context.Context, m *mux.Mux, rt api.RuntimeService) error {
	select {
	case <-r.synced:
	case <-ctx.Done():
		return errors.New("not synchronized")
	}
	req := &api.UpdateContainersRequest{}
	size := adaptation.MaxMessageSize/r.bloat - 64<<10
	if r.bloatEmpty {
		req.ProtoReflect().SetUnknown(emptyFields(1, size/2))
	} else {
		req.ProtoReflect().SetUnknown(bloatedUpdates(size))
	}
	// A small request first: the runtime used to apply the limit of an
	// unconfigured plugin to the first message read after Configure.
	if _, err := rt.UpdateContainers(ctx, &api.UpdateContainersRequest{}); err != nil {
		return err
	}
	say("BLOAT start request_bytes=%d", proto.Size(req))
	var (
		wg   sync.WaitGroup
		sent atomic.Int64
	)
	for range r.bloat {
		wg.Go(func() {
			for m.Err() == nil {
				_, err := rt.UpdateContainers(ctx, req)
				if n := sent.Add(1); n%16 == 0 {
					say("BLOAT %d error=%v", n, err)
				}
			}
		})
	}
	wg.Wait()
	say("CLOSED %v", m.Err())
	return nil
}
