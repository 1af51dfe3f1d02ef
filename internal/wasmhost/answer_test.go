//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wirelimit"
	"google.golang.org/protobuf/encoding/protowire"
)

// answerModule returns a module with every export of the ABI whose
// answers are what the host wrote into its memory: every request export
// returns the i64 at address 0 (ptr<<32 | size, with the error bit), and
// malloc returns the i32 at address 8; free does nothing. Its memory has
// pages pages of 64 KiB.
func answerModule(pages uint32) []byte {
	u32 := func(v uint32) []byte { // unsigned LEB128
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				b = append(b, c|0x80)
				continue
			}
			return append(b, c)
		}
	}
	vec := func(n int, items ...[]byte) []byte {
		b := u32(uint32(n))
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	section := func(id byte, body []byte) []byte {
		return append(append([]byte{id}, u32(uint32(len(body)))...), body...)
	}
	name := func(s string) []byte { return append(u32(uint32(len(s))), s...) }
	body := func(code ...byte) []byte {
		b := append([]byte{0x00}, code...) // no locals
		return append(u32(uint32(len(b))), b...)
	}
	types := vec(4,
		[]byte{0x60, 0x00, 0x01, 0x7e},             // 0: () -> i64
		[]byte{0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7e}, // 1: (i32, i32) -> i64
		[]byte{0x60, 0x01, 0x7f, 0x01, 0x7f},       // 2: (i32) -> i32
		[]byte{0x60, 0x01, 0x7f, 0x00},             // 3: (i32) -> ()
	)
	funcs := vec(4, []byte{0}, []byte{1}, []byte{2}, []byte{3})
	exports := [][]byte{
		append(name("plugin_api_version"), 0x00, 0),
		append(name("malloc"), 0x00, 2),
		append(name("free"), 0x00, 3),
		append(name("memory"), 0x02, 0),
	}
	for _, fn := range Funcs() {
		exports = append(exports, append(name(fn), 0x00, 1))
	}
	code := vec(4,
		body(0x42, APIVersion, 0x0b),             // i64.const 1
		body(0x41, 0x00, 0x29, 0x03, 0x00, 0x0b), // i64.load (i32.const 0)
		body(0x41, 0x08, 0x28, 0x02, 0x00, 0x0b), // i32.load (i32.const 8)
		body(0x0b),
	)
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, types)...)
	m = append(m, section(3, funcs)...)
	m = append(m, section(5, vec(1, append([]byte{0x00}, u32(pages)...)))...) // one memory, min pages
	m = append(m, section(7, vec(len(exports), exports...))...)
	return append(m, section(10, code)...)
}

// loadAnswerModule loads answerModule(pages) with opts.
func loadAnswerModule(t testing.TB, pages uint32, opts Options) *Plugin {
	t.Helper()
	path := filepath.Join(t.TempDir(), "10-answer")
	if err := os.WriteFile(path, answerModule(pages), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Load(ctx, path, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// setAnswer makes the next call of p answer (ptr, size | errBit) and its
// malloc return mallocRet, writing answer at ptr. p must have an
// instance (see ensureInstance).
func setAnswer(t testing.TB, p *Plugin, ptr, size uint32, errBit bool, mallocRet uint32, answer []byte) {
	t.Helper()
	mem := p.inst.mod.Memory()
	ret := uint64(ptr)<<32 | uint64(size)
	if errBit {
		ret |= wasmabi.ErrorBit
	}
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[0:8], ret)
	binary.LittleEndian.PutUint32(hdr[8:12], mallocRet)
	if !mem.Write(0, hdr[:]) || len(answer) > 0 && !mem.Write(ptr, answer) {
		t.Fatalf("writing the answer (%#x, %d) into %d bytes of memory", ptr, len(answer), mem.Size())
	}
}

// ensureInstance gives p an instance if the last was discarded, by a
// call that answers (0, 0).
func ensureInstance(t testing.TB, p *Plugin) {
	t.Helper()
	if p.inst != nil {
		return
	}
	if _, err := p.Call(context.Background(), FuncShutdown, nil); err != nil {
		t.Fatalf("making a fresh instance: %v", err)
	}
}

// emptyUpdates is n empty entries of field 1 (SynchronizeResponse.update).
func emptyUpdates(n int) []byte {
	return bytes.Repeat(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), nil), n)
}

// liveHeap returns the bytes of live heap objects after a GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// allocated returns the bytes allocated on the heap so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestOversizeAnswerIsNotRead: a guest answering Synchronize with 16 MiB
// of its memory (8,388,608 empty updates; before the bound the host
// copied and decoded them: 704 MiB of live heap) fails the call with
// KindOversize before anything is read, keeps its instance, and its next
// answer is read.
func TestOversizeAnswerIsNotRead(t *testing.T) {
	p := loadAnswerModule(t, 300, Options{})
	ensureInstance(t, p)
	const size = 16 << 20
	setAnswer(t, p, 64<<10, size, false, 0, emptyUpdates(size/2))
	gen := p.Generation()
	start, live := allocated(), liveHeap()
	rsp, err := NewClient(p).Synchronize(context.Background(), &api.SynchronizeRequest{})
	grew, took := liveHeap()-min(live, liveHeap()), allocated()-start
	t.Logf("16 MiB answer: allocated %.2f MiB, live heap +%.2f MiB", float64(took)/(1<<20), float64(grew)/(1<<20))
	var ce *CallError
	var se *wirelimit.SizeError
	if !errors.As(err, &ce) || ce.Kind != KindOversize || ce.Discarded || !errors.As(err, &se) ||
		se.Size != size || se.Limit != DefaultMaxMessageSize {
		t.Fatalf("Synchronize answered %d updates, error %v; want an oversize error of %d bytes above %d", len(rsp.GetUpdate()), err, size, DefaultMaxMessageSize)
	}
	if took > 1<<20 {
		t.Errorf("the refused call allocated %d bytes, want under 1 MiB (the answer is not read)", took)
	}
	if !strings.Contains(err.Error(), "10-answer") || !strings.Contains(err.Error(), "16777216 bytes, above the limit of 4194304") {
		t.Errorf("error %q should name the plugin and the sizes", err)
	}
	if p.Generation() != gen || p.inst == nil {
		t.Errorf("instance discarded (generation %d -> %d), want it kept", gen, p.Generation())
	}
	// The same instance answers again, within the bound.
	setAnswer(t, p, 64<<10, 4, false, 0, emptyUpdates(2))
	if rsp, err := NewClient(p).Synchronize(context.Background(), &api.SynchronizeRequest{}); err != nil || len(rsp.GetUpdate()) != 2 {
		t.Fatalf("next Synchronize: %d updates, %v; want 2", len(rsp.GetUpdate()), err)
	}
}

// TestEventAnswerBound: the answers to events are bounded by
// MaxAnswerSize, the others by MaxMessageSize; a guest's error string
// too.
func TestEventAnswerBound(t *testing.T) {
	const event, message = 64 << 10, 256 << 10
	p := loadAnswerModule(t, 8, Options{MaxAnswerSize: event, MaxMessageSize: message})
	ctx := context.Background()
	ensureInstance(t, p)
	for _, tc := range []struct {
		fn     string
		size   uint32
		errBit bool
		limit  int // 0: accepted
	}{
		{EventFunc(api.Event_CREATE_CONTAINER), event, false, 0},
		{EventFunc(api.Event_CREATE_CONTAINER), event + 1, false, event},
		{EventFunc(api.Event_CREATE_CONTAINER), event + 1, true, event},
		{FuncStateChange, event + 1, false, event},
		{FuncSynchronize, event + 1, false, 0},
		{FuncConfigure, message, false, 0},
		{FuncConfigure, message + 1, false, message},
	} {
		setAnswer(t, p, 64<<10, tc.size, tc.errBit, 0, nil)
		out, err := p.Call(ctx, tc.fn, nil)
		var se *wirelimit.SizeError
		switch {
		case tc.limit == 0 && (err != nil || len(out) != int(tc.size)):
			t.Errorf("%s answering %d bytes: %d bytes, %v; want it read", tc.fn, tc.size, len(out), err)
		case tc.limit != 0 && (!errors.As(err, &se) || se.Limit != tc.limit):
			t.Errorf("%s answering %d bytes (error bit %v): %v, want refused above %d", tc.fn, tc.size, tc.errBit, err, tc.limit)
		}
	}
}

// TestAnswerOverCountIsNotDecoded: an answer within the size bound that
// holds more updates than the host decodes fails with KindOversize,
// without being decoded; the instance is kept.
func TestAnswerOverCountIsNotDecoded(t *testing.T) {
	p := loadAnswerModule(t, 80, Options{})
	ensureInstance(t, p)
	const n = 1 << 20 // 2 MiB of empty updates
	setAnswer(t, p, 64<<10, 2*n, false, 0, emptyUpdates(n))
	start := allocated()
	rsp, err := NewClient(p).Synchronize(context.Background(), &api.SynchronizeRequest{})
	took := allocated() - start
	t.Logf("2 MiB answer of %d updates: allocated %.2f MiB", n, float64(took)/(1<<20))
	var ce *CallError
	var le *wirelimit.LimitError
	if !errors.As(err, &ce) || ce.Kind != KindOversize || ce.Discarded || !errors.As(err, &le) || le.Limit != wirelimit.MaxUpdates {
		t.Fatalf("Synchronize answered %d updates, error %v; want an oversize error of more than %d updates", len(rsp.GetUpdate()), err, wirelimit.MaxUpdates)
	}
	if took > 4<<20 {
		t.Errorf("the refused call allocated %d bytes, want under 4 MiB (the copy of the answer, not its decoding)", took)
	}
	// At the bound it decodes.
	setAnswer(t, p, 64<<10, 2*wirelimit.MaxUpdates, false, 0, emptyUpdates(wirelimit.MaxUpdates))
	if rsp, err := NewClient(p).Synchronize(context.Background(), &api.SynchronizeRequest{}); err != nil || len(rsp.GetUpdate()) != wirelimit.MaxUpdates {
		t.Fatalf("Synchronize at the bound: %d updates, %v", len(rsp.GetUpdate()), err)
	}
}
