//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wirelimit"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// abiMethods are the Plugin service methods and their exports.
func abiMethods() (methods, fns []string) {
	sd := api.File_nrikit_nri_proto.Services().ByName("Plugin").Methods()
	for i := range sd.Len() {
		m := string(sd.Get(i).Name())
		methods, fns = append(methods, m), append(fns, wasmabi.MethodFunc(m))
	}
	return methods, fns
}

// FuzzCallABI calls an export of a guest whose answer (pointer, size and
// error bit), malloc result and memory come from the fuzzer, then decodes
// the answer as the method's. The call must classify what the guest did
// as the ABI says (docs/wasm-abi.md): a malloc result or an answer out of
// the guest's memory is an ABI violation that discards the instance; an
// answer above the export's bound is refused unread, the instance kept;
// else the answer (or error string) is exactly the guest's bytes. The
// decoding must fail, be refused as over its bounds, or hold at most
// wirelimit.MaxUpdates updates and evictions; nothing panics.
func FuzzCallABI(f *testing.F) {
	const event, message = 4 << 10, 16 << 10
	p := loadAnswerModule(f, 2, Options{MaxAnswerSize: event, MaxMessageSize: message})
	methods, fns := abiMethods()
	sync := emptyUpdates(3)
	f.Add(uint8(1), uint64(0), uint32(0), uint8(0), sync)                          // Synchronize, answer at 64
	f.Add(uint8(0x41), uint64(0), uint32(0), uint8(0), []byte("bad request"))      // error string
	f.Add(uint8(0x81), uint64(1<<48|10), uint32(0), uint8(0), []byte(nil))         // out of memory
	f.Add(uint8(0x84), uint64(64<<32|(event+1)), uint32(0), uint8(0), []byte(nil)) // event answer above the bound
	f.Add(uint8(5), uint64(0), uint32(1024), uint8(7), emptyUpdates(2000))         // a request, and too many updates
	f.Add(uint8(5), uint64(0), uint32(0), uint8(7), []byte(nil))                   // malloc returns 0
	f.Fuzz(func(t *testing.T, which uint8, ret uint64, mallocRet uint32, reqLen uint8, data []byte) {
		ensureInstance(t, p)
		i := int(which&0x3f) % len(fns)
		fn, method := fns[i], methods[i]
		mem := p.inst.mod.Memory()
		ptr, size, errBit := uint32(ret>>32), uint32(ret)&^wasmabi.ErrorBit, uint32(ret)&wasmabi.ErrorBit != 0
		if which&0x80 == 0 { // the fuzzer's bytes, at a valid place
			ptr, size, errBit = 64, uint32(min(len(data), int(mem.Size())-64)), which&0x40 != 0
			data = data[:size]
		} else {
			data = nil
		}
		setAnswer(t, p, ptr, size, errBit, mallocRet, data)
		req := bytes.Repeat([]byte{0x5a}, int(reqLen%32))
		if len(req) > 0 && mallocRet != 0 && uint64(mallocRet)+uint64(len(req)) <= uint64(mem.Size()) {
			// The request, written at mallocRet, may overwrite the answer
			// the guest returns.
			hdr := append([]byte(nil), memAt(t, p, 0, 8)...)
			for i := range req {
				if a := uint64(mallocRet) + uint64(i); a < 8 {
					hdr[a] = req[i]
				}
			}
			ret := binary.LittleEndian.Uint64(hdr)
			ptr, size, errBit = uint32(ret>>32), uint32(ret)&^wasmabi.ErrorBit, uint32(ret)&wasmabi.ErrorBit != 0
		}
		gen := p.Generation()
		out, err := p.Call(context.Background(), fn, req)

		var ce *CallError
		limit := p.opts.answerLimit(fn)
		memSize := uint64(mem.Size())
		switch {
		case len(req) > 0 && (mallocRet == 0 || uint64(mallocRet)+uint64(len(req)) > memSize),
			size > 0 && uint64(ptr)+uint64(size) > memSize:
			if !errors.As(err, &ce) || ce.Kind != KindABI || !ce.Discarded || p.inst != nil {
				t.Fatalf("%s: answer (%#x, %d), malloc %#x for %d bytes: %v, want an ABI violation that discards the instance", fn, ptr, size, mallocRet, len(req), err)
			}
			return
		case int(size) > limit:
			var se *wirelimit.SizeError
			if !errors.As(err, &ce) || ce.Kind != KindOversize || ce.Discarded || !errors.As(err, &se) || se.Size != int(size) || se.Limit != limit || out != nil {
				t.Fatalf("%s: %d-byte answer above %d: (%d bytes, %v), want refused unread", fn, size, limit, len(out), err)
			}
		case errBit:
			if !errors.As(err, &ce) || ce.Kind != KindGuest || ce.Message != string(memAt(t, p, ptr, size)) {
				t.Fatalf("%s: error string of %d bytes: %v, want the guest's", fn, size, err)
			}
		default:
			if err != nil || !bytes.Equal(out, memAt(t, p, ptr, size)) {
				t.Fatalf("%s: %d-byte answer: (%d bytes, %v), want the guest's bytes", fn, size, len(out), err)
			}
		}
		if p.Generation() != gen || p.inst == nil {
			t.Fatalf("%s: the instance was discarded: %v", fn, err)
		}
		if err != nil {
			return
		}
		mt, lerr := protoregistry.GlobalTypes.FindMessageByName(api.File_nrikit_nri_proto.Services().ByName("Plugin").Methods().ByName(protoreflect.Name(method)).Output().FullName())
		if lerr != nil {
			t.Fatal(lerr)
		}
		rsp := mt.New().Interface()
		var de *DecodeError
		var le *wirelimit.LimitError
		switch err := p.DecodeAnswer(method, out, rsp); {
		case err == nil:
			checkDecoded(t, method, rsp)
		case errors.As(err, &de):
			if proto.Unmarshal(out, mt.New().Interface()) == nil && errors.Is(err, wirelimit.ErrMalformed) {
				t.Fatalf("%s: %v, but protobuf decodes the answer", method, err)
			}
		case errors.As(err, &ce) && ce.Kind == KindOversize && errors.As(err, &le):
		default:
			t.Fatalf("%s: decoding: %v", method, err)
		}
	})
}

// memAt returns size bytes of p's memory at ptr.
func memAt(t *testing.T, p *Plugin, ptr, size uint32) []byte {
	t.Helper()
	if size == 0 {
		return nil
	}
	b, ok := p.inst.mod.Memory().Read(ptr, size)
	if !ok {
		t.Fatalf("(%#x, %d) outside the memory", ptr, size)
	}
	return b
}

// checkDecoded fails t if the decoded answer rsp holds more updates or
// evictions than wirelimit lets through.
func checkDecoded(t *testing.T, method string, rsp proto.Message) {
	t.Helper()
	m := rsp.ProtoReflect()
	for _, name := range []protoreflect.Name{"update", "evict"} {
		fd := m.Descriptor().Fields().ByName(name)
		if fd == nil || !fd.IsList() {
			continue
		}
		if n := m.Get(fd).List().Len(); n > wirelimit.MaxUpdates {
			t.Fatalf("%s: decoded %d %s entries, above %d", method, n, name, wirelimit.MaxUpdates)
		}
	}
}
