package protocoldoc

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/socketpair"
	"github.com/nrikit/nrikit/stub"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

var update = flag.Bool("update", false, "rewrite section 14 of docs/protocol.md from the capture")

const (
	docPath     = "../../docs/protocol.md"
	beginMarker = "<!-- BEGIN GENERATED CAPTURE: go test ./tests/protocoldoc -update -->"
	endMarker   = "<!-- END GENERATED CAPTURE -->"
)

// recorder is a net.Conn that keeps a copy of every byte read and written.
type recorder struct {
	net.Conn
	mu            sync.Mutex
	read, written bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.read.Write(p[:n])
	r.mu.Unlock()
	return n, err
}

func (r *recorder) Write(p []byte) (int, error) {
	n, err := r.Conn.Write(p)
	r.mu.Lock()
	r.written.Write(p[:n])
	r.mu.Unlock()
	return n, err
}

func (r *recorder) snapshot() (read, written []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.read.Bytes()), bytes.Clone(r.written.Bytes())
}

type envPlugin struct{}

func (envPlugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// capture registers a stub-based plugin "10-logger" with a real
// Adaptation over a socket pair and returns what the plugin's side of the
// socket wrote and read.
func capture(t *testing.T) (written, read []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pair, err := socketpair.New()
	if err != nil {
		t.Fatal(err)
	}
	defer pair.Close()
	runtimeEnd, err := pair.LocalConn()
	if err != nil {
		t.Fatal(err)
	}
	pluginEnd, err := socketpair.FileConn(int(pair.PeerFile().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Conn: pluginEnd}

	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return nil, nil, nil }
	upd := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	rt, err := adaptation.New("nrikit-doc", "v0", list, upd, adaptation.WithDisabledExternalConnections(),
		adaptation.WithPluginDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)

	served := make(chan error, 1)
	go func() { served <- rt.ServeConn(ctx, runtimeEnd) }()

	s, err := stub.New(envPlugin{}, stub.WithPluginName("logger"), stub.WithPluginIdx("10"), stub.WithConnection(rec))
	if err != nil {
		t.Fatal(err)
	}
	// The stub's RegisterPlugin call carries the caller's deadline; give it
	// the default registration timeout, as a plugin's main would.
	startCtx, cancelStart := context.WithTimeout(ctx, api.DefaultRegistrationTimeout)
	defer cancelStart()
	if err := s.Start(startCtx); err != nil {
		t.Fatalf("plugin registration: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("runtime side of the registration: %v", err)
	}
	s.Stop()
	read, written = rec.snapshot()
	return written, read
}

// frame is one multiplexer frame holding one whole ttrpc message.
type frame struct {
	conn, length        uint32
	ttrpcLen, stream    uint32
	msgType, flags      byte
	data, raw, ttrpcHdr []byte
}

// frames splits a byte stream into multiplexer frames and parses the
// ttrpc header at the start of each payload.
func frames(t *testing.T, b []byte) []frame {
	t.Helper()
	var out []frame
	for len(b) >= 8 {
		f := frame{conn: binary.BigEndian.Uint32(b), length: binary.BigEndian.Uint32(b[4:])}
		if uint32(len(b)-8) < f.length {
			break
		}
		f.raw = b[:8+f.length]
		payload := b[8 : 8+f.length]
		b = b[8+f.length:]
		if len(payload) < 10 {
			continue
		}
		f.ttrpcHdr = payload[:10]
		f.ttrpcLen = binary.BigEndian.Uint32(payload)
		f.stream = binary.BigEndian.Uint32(payload[4:])
		f.msgType, f.flags = payload[8], payload[9]
		f.data = payload[10:]
		out = append(out, f)
	}
	return out
}

func find(t *testing.T, fs []frame, conn uint32, msgType byte, stream uint32) frame {
	t.Helper()
	for _, f := range fs {
		if f.conn == conn && f.msgType == msgType && f.stream == stream {
			return f
		}
	}
	t.Fatalf("no frame on conn %d with ttrpc type %d, stream %d", conn, msgType, stream)
	return frame{}
}

func hexBytes(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(parts, " ")
}

// annotate renders an encoded protobuf message one top-level field per
// line, hex on the left, the field's name and value on the right.
func annotate(t *testing.T, b []byte, md protoreflect.MessageDescriptor, skip map[protoreflect.Name]string) string {
	t.Helper()
	var sb strings.Builder
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag in %s", md.FullName())
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("bad value of field %d in %s", num, md.FullName())
		}
		field := b[:n+m]
		fd := md.Fields().ByNumber(num)
		name := fmt.Sprintf("field %d", num)
		if fd != nil {
			name = fmt.Sprintf("field %d (%s)", num, fd.Name())
		}
		desc := name
		hex := hexBytes(field)
		switch {
		case fd != nil && skip[fd.Name()] != "":
			hex = hexBytes(field[:n+lenPrefix(field[n:])]) + " ..."
			desc += ": " + skip[fd.Name()]
		case typ == protowire.BytesType && fd != nil && fd.Kind() == protoreflect.StringKind:
			v, _ := protowire.ConsumeString(b[n:])
			desc += fmt.Sprintf(", length %d, %q", len(v), v)
		case typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(b[n:])
			desc += fmt.Sprintf(" = %d", v)
		case typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(b[n:])
			desc += fmt.Sprintf(", length %d", len(v))
		}
		// Long fields wrap at 12 bytes a line; the description goes on
		// the last line.
		for len(hex) > 36 {
			sb.WriteString(hex[:35] + "\n")
			hex = hex[36:]
		}
		fmt.Fprintf(&sb, "%-40s %s\n", hex, desc)
		b = b[n+m:]
	}
	return sb.String()
}

// lenPrefix returns the size of the length prefix of a length-delimited value.
func lenPrefix(b []byte) int {
	_, n := protowire.ConsumeVarint(b)
	return n
}

// render produces section 14's generated part from a capture.
func render(t *testing.T, written, read []byte) string {
	t.Helper()
	reqFrame := find(t, frames(t, written), 2, 1, 1)
	rspFrame := find(t, frames(t, read), 2, 2, 1)

	var req ttrpc.Request
	if err := proto.Unmarshal(reqFrame.data, &req); err != nil {
		t.Fatalf("decoding the ttrpc request: %v", err)
	}
	if req.Service != api.RuntimeServiceName || req.Method != "RegisterPlugin" {
		t.Fatalf("first call on conn 2 is /%s/%s, want RegisterPlugin", req.Service, req.Method)
	}
	// The deadline travels as the time left when the call was made; show
	// the configured value so the document is reproducible.
	left := time.Duration(req.TimeoutNano)
	if left <= 0 || left > api.DefaultRegistrationTimeout {
		t.Fatalf("timeout_nano = %v, want (0, %v]", left, api.DefaultRegistrationTimeout)
	}
	req.TimeoutNano = int64(api.DefaultRegistrationTimeout)
	reqData, err := proto.MarshalOptions{Deterministic: true}.Marshal(&req)
	if err != nil {
		t.Fatal(err)
	}
	var reg api.RegisterPluginRequest
	if err := proto.Unmarshal(req.Payload, &reg); err != nil {
		t.Fatalf("decoding RegisterPluginRequest: %v", err)
	}
	var rsp ttrpc.Response
	if err := proto.Unmarshal(rspFrame.data, &rsp); err != nil {
		t.Fatalf("decoding the ttrpc response: %v", err)
	}
	if rsp.Status.GetCode() != 0 {
		t.Fatalf("RegisterPlugin answered with status %v", rsp.Status)
	}

	ttrpcHdr := func(length, stream uint32, typ, flags byte) []byte {
		h := make([]byte, 10)
		binary.BigEndian.PutUint32(h, length)
		binary.BigEndian.PutUint32(h[4:], stream)
		h[8], h[9] = typ, flags
		return h
	}
	muxHdr := func(conn, length uint32) []byte {
		h := make([]byte, 8)
		binary.BigEndian.PutUint32(h, conn)
		binary.BigEndian.PutUint32(h[4:], length)
		return h
	}
	reqTTRPC := ttrpcHdr(uint32(len(reqData)), reqFrame.stream, reqFrame.msgType, reqFrame.flags)
	reqMux := muxHdr(2, uint32(len(reqData)+10))

	var sb strings.Builder
	fmt.Fprintf(&sb, "Captured by `tests/protocoldoc` from nrikit's stub registering as `%s-%s` with nrikit's runtime.\n",
		reg.PluginIdx, reg.PluginName)
	fmt.Fprintf(&sb, "The plugin's `RegisterPluginRequest` (%d bytes):\n\n```\n", len(req.Payload))
	sb.WriteString(annotate(t, req.Payload, (&api.RegisterPluginRequest{}).ProtoReflect().Descriptor(), nil))
	fmt.Fprintf(&sb, "```\n\nwrapped in a ttrpc `Request` (%d bytes; `timeout_nano` is the time left until the caller's deadline,\n", len(reqData))
	fmt.Fprintf(&sb, "shown here as the full %v registration timeout):\n\n```\n", api.DefaultRegistrationTimeout)
	sb.WriteString(annotate(t, reqData, (&ttrpc.Request{}).ProtoReflect().Descriptor(),
		map[protoreflect.Name]string{"payload": "the RegisterPluginRequest above"}))
	fmt.Fprintf(&sb, "```\n\nbehind a ttrpc header (data length %d, stream %d, type 0x%02x request, flags 0x%02x) and a multiplexer\n",
		len(reqData), reqFrame.stream, reqFrame.msgType, reqFrame.flags)
	fmt.Fprintf(&sb, "header (connection 2, payload %d bytes). The frame starts:\n\n```\n%s   %s   %s ...\n```\n\n",
		len(reqData)+10, hexBytes(reqMux), hexBytes(reqTTRPC), hexBytes(reqData[:4]))
	fmt.Fprintf(&sb, "The runtime's answer arrives on connection 2, stream %d, as a ttrpc response (type 0x%02x) whose `Response`\n",
		rspFrame.stream, rspFrame.msgType)
	fmt.Fprintf(&sb, "is %d bytes: an absent `status` means OK, and the payload, an encoded `Empty`, is zero bytes.\n", len(rspFrame.data))
	fmt.Fprintf(&sb, "The whole frame:\n\n```\n%s", strings.TrimSpace(hexBytes(rspFrame.raw[:8])+"   "+hexBytes(rspFrame.ttrpcHdr)+"   "+hexBytes(rspFrame.data)))
	sb.WriteString("\n```\n")
	if len(rspFrame.data) > 0 {
		sb.WriteString("\n```\n")
		sb.WriteString(annotate(t, rspFrame.data, (&ttrpc.Response{}).ProtoReflect().Descriptor(), nil))
		sb.WriteString("```\n")
	}
	return sb.String()
}

func TestSection14MatchesCapture(t *testing.T) {
	written, read := capture(t)
	generated := render(t, written, read)

	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the markers %q and %q around the capture", docPath, beginMarker, endMarker)
	}
	current := doc[begin+len(beginMarker)+1 : end]
	if current == generated {
		return
	}
	if *update {
		doc = doc[:begin+len(beginMarker)+1] + generated + doc[end:]
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote section 14 of %s", docPath)
		return
	}
	t.Fatalf("section 14 of %s differs from the capture; run `go test ./tests/protocoldoc -update`.\n--- document\n%s\n--- capture\n%s",
		docPath, current, generated)
}
