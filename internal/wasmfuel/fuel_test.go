package wasmfuel

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// testModule returns a module with an imported function (so that the
// defined functions' indices shift), a table with an element segment,
// call_indirect, a start function, a name section and these exports:
// count(n) = 2n(n+1) + 8 (a loop with call and call_indirect, plus the
// start function's 7 and env.add1), spin() loops forever, tree(n) = 2^n
// by recursion without loops.
func testModule() []byte {
	sec := func(id byte, b ...byte) []byte {
		return append(appendU32([]byte{id}, uint32(len(b))), b...)
	}
	body := func(b ...byte) []byte { return append(appendU32(nil, uint32(len(b))), b...) }
	m := append([]byte(nil), header...)
	m = append(m, sec(secType, 2, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 0, 0)...)
	m = append(m, sec(secImport, append(appendName(appendName([]byte{1}, "env"), "add1"), 0, 0)...)...)
	m = append(m, sec(3, 5, 0, 0, 1, 0, 1)...)
	m = append(m, sec(4, 1, 0x70, 0, 1)...)
	m = append(m, sec(secGlobal, 1, 0x7f, 1, 0x41, 0, 0x0b)...)
	exp := []byte{3}
	exp = append(appendName(exp, "count"), 0, 1)
	exp = append(appendName(exp, "spin"), 0, 3)
	exp = append(appendName(exp, "tree"), 0, 4)
	m = append(m, sec(secExport, exp...)...)
	m = append(m, sec(secStart, 5)...)
	m = append(m, sec(secElem, 1, 0, 0x41, 0, 0x0b, 1, 2)...)
	code := []byte{5}
	code = append(code, body(1, 1, 0x7f,
		0x02, 0x40, 0x03, 0x40,
		0x20, 0, 0x45, 0x0d, 1,
		0x20, 1, 0x20, 0, 0x10, 2, 0x6a, 0x21, 1,
		0x20, 1, 0x20, 0, 0x41, 0, 0x11, 0, 0, 0x6a, 0x21, 1,
		0x20, 0, 0x41, 1, 0x6b, 0x21, 0,
		0x0c, 0, 0x0b, 0x0b,
		0x20, 1, 0x23, 0, 0x6a, 0x10, 0, 0x0b)...)
	code = append(code, body(0, 0x20, 0, 0x41, 1, 0x74, 0x0b)...)
	code = append(code, body(0, 0x03, 0x40, 0x0c, 0, 0x0b, 0x0b)...)
	code = append(code, body(0, 0x20, 0, 0x45, 0x04, 0x7f, 0x41, 1, 0x05,
		0x20, 0, 0x41, 1, 0x6b, 0x10, 4, 0x20, 0, 0x41, 1, 0x6b, 0x10, 4, 0x6a, 0x0b, 0x0b)...)
	code = append(code, body(0, 0x41, 7, 0x24, 0, 0x0b)...)
	m = append(m, sec(secCode, code...)...)
	return append(m, sec(secCustom, appendName(nil, "name")...)...)
}

// gauge counts the calls of the refuel a test instance imports and says
// when to stop the call that made them.
type gauge struct {
	// refuels is the number of refuel calls.
	refuels int
	// stopAt, if positive, is the refuel call that stops the call, as
	// one that finds the call's context done does.
	stopAt int
}

// instance compiles code (instrumented if budget > 0) with env.add1 and
// a refuel that counts its calls in g and stops the call (a deadline
// exit) once ctx is done or at g.stopAt. A call whose context is done
// is also closed by wazero, which checks at loop headers: a guard
// against a loop the instrumentation missed, which no refuel would stop
// (a recursion it missed runs on until the test binary's -timeout).
func instance(tb testing.TB, ctx context.Context, code []byte, budget int32, g *gauge) (api.Module, error) {
	tb.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	tb.Cleanup(func() { _ = r.Close(context.Background()) })
	if _, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(x uint32) uint32 { return x + 1 }).Export("add1").Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	if budget > 0 {
		var err error
		if code, err = Instrument(code, budget); err != nil {
			return nil, err
		}
		if _, err := r.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().
			WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
				g.refuels++
				if ctx.Err() != nil || g.refuels == g.stopAt {
					panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
				}
				stack[0] = uint64(budget)
			}), nil, []api.ValueType{api.ValueTypeI32}).
			Export(ImportName).Instantiate(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return r.Instantiate(ctx, code)
}

func call(ctx context.Context, m api.Module, fn string, args ...uint64) (uint64, error) {
	res, err := m.ExportedFunction(fn).Call(ctx, args...)
	if err != nil || len(res) == 0 {
		return 0, err
	}
	return res[0], nil
}

func TestInstrumentSameResults(t *testing.T) {
	ctx := context.Background()
	plain, err := instance(t, ctx, testModule(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var g gauge
	fueled, err := instance(t, ctx, testModule(), 3, &g)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fn   string
		arg  uint64
		want uint64
	}{{"count", 10, 2*10*11 + 8}, {"count", 0, 8}, {"tree", 10, 1024}} {
		for _, m := range []api.Module{plain, fueled} {
			got, err := call(ctx, m, tc.fn, tc.arg)
			if err != nil || got != tc.want {
				t.Errorf("%s(%d) = %d, %v; want %d", tc.fn, tc.arg, got, err, tc.want)
			}
		}
	}
	// tree(10) enters 2047 functions, count(10) runs 11 loop headers and
	// 10 doubles: about 2100 counts at 3 a refuel.
	if g.refuels < 600 || g.refuels > 800 {
		t.Errorf("%d refuels, want about 700", g.refuels)
	}
}

// TestInstrumentStopsLoops: an endless loop without calls (spin) and a
// recursion without loops (tree) call refuel at every budget spent, so
// the refuel that finds the call's deadline passed stops them. Counted,
// not timed (a busy machine takes longer for a budget, not more refuels
// or instructions): the call goes on through stopAt refuels and ends at
// the one that says stop, with the exit of a deadline.
func TestInstrumentStopsLoops(t *testing.T) {
	const stopAt = 50
	for _, tc := range []struct {
		fn  string
		arg []uint64
	}{{"spin", nil}, {"tree", []uint64{60}}} {
		t.Run(tc.fn, func(t *testing.T) {
			// Only a loop the instrumentation missed meets this guard.
			ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
			defer cancel()
			g := gauge{stopAt: stopAt}
			m, err := instance(t, ctx, testModule(), 1<<16, &g)
			if err != nil {
				t.Fatal(err)
			}
			_, err = call(ctx, m, tc.fn, tc.arg...)
			var exit *sys.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
				t.Fatalf("%s: %v, want a deadline exit", tc.fn, err)
			}
			if g.refuels != stopAt {
				t.Errorf("%s ended after %d refuels, want %d (the one that stopped it)", tc.fn, g.refuels, stopAt)
			}
		})
	}
}

func TestInstrumentDropsNamesAndShiftsIndices(t *testing.T) {
	out, err := Instrument(testModule(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("\x04name")) {
		t.Error("name section kept")
	}
	if !bytes.Contains(out, []byte(ImportModule)) {
		t.Error("no refuel import")
	}
	if _, err := Instrument(out[:len(out)-3], 5); err == nil {
		t.Error("truncated module accepted")
	}
	if _, err := Instrument([]byte("\x00asm\x01\x00\x00\x00\x0a\x04\x01\x02\x00\xff"), 5); err == nil {
		t.Error("unknown opcode accepted")
	}
}

// compiles reports whether r compiles code. wazero v1.12's validator
// panics on some invalid modules (a function section naming a type out
// of range, testdata/fuzz/FuzzInstrument/58ac5a4ceb870f4b): such a
// module counts as invalid.
func compiles(ctx context.Context, r wazero.Runtime, code []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := r.CompileModule(ctx, code)
	return err == nil
}

func FuzzInstrument(f *testing.F) {
	f.Add(testModule(), uint8(5))
	f.Fuzz(func(t *testing.T, code []byte, n uint8) {
		ctx := context.Background()
		n %= 12
		out, err := Instrument(code, 2)
		if CheckCounts(code) != nil {
			return // wazero would run out of memory decoding it
		}
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer r.Close(ctx)
		if !compiles(ctx, r, code) {
			return // not valid: Instrument may fail or not
		}
		if err != nil {
			t.Fatalf("valid module not instrumented: %v", err)
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Fatalf("instrumented module invalid: %v", err)
		}
		if !bytes.Equal(code, testModule()) {
			return
		}
		plain, err := instance(t, ctx, code, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		fueled, err := instance(t, ctx, code, 2, &gauge{})
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range []string{"count", "tree"} {
			a, errA := call(ctx, plain, fn, uint64(n))
			b, errB := call(ctx, fueled, fn, uint64(n))
			if a != b || (errA == nil) != (errB == nil) {
				t.Errorf("%s(%d): %d, %v plain; %d, %v instrumented", fn, n, a, errA, b, errB)
			}
		}
	})
}

// TestInstrumentRefusesOutOfRangeIndices: an index just past the
// original's globals or functions would name the counter or the host
// function after instrumentation, so a module could reset its own budget.
func TestInstrumentRefusesOutOfRangeIndices(t *testing.T) {
	for name, patch := range map[string][2][]byte{
		"global.set": {{0x41, 7, 0x24, 0, 0x0b}, {0x41, 7, 0x24, 1, 0x0b}},
		"call":       {{0x10, 4, 0x20, 0}, {0x10, 6, 0x20, 0}},
	} {
		code := testModule()
		if !bytes.Contains(code, patch[0]) {
			t.Fatalf("%s: pattern not in the test module", name)
		}
		if _, err := Instrument(code, 5); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bad := bytes.Replace(code, patch[0], patch[1], 1)
		if _, err := Instrument(bad, 5); err == nil {
			t.Errorf("%s: out-of-range index accepted", name)
		}
	}
}

func TestCheckCounts(t *testing.T) {
	if err := CheckCounts(testModule()); err != nil {
		t.Errorf("test module: %v", err)
	}
	// 2^31 imports declared in a 10-byte section.
	bad := append(append([]byte(nil), header...), 0x02, 0x0a, 0x80, 0x80, 0x80, 0x80, 0x08, 0, 0, 0, 0, 0)
	if err := CheckCounts(bad); err == nil {
		t.Error("huge import count accepted")
	}
}

// instrumentedSum is the SHA-256 of testModule instrumented with a
// budget of 1000, at Version 1.
const instrumentedSum = "a6e26343b10e8e41e1277b0df9d70c5ecc54f7b33d32fd6fcf84465d6f11b758"

// TestInstrumentPinned checks that Instrument writes what it wrote when
// Version was last increased: runtimes keep instrumented modules under
// Version, so a change to the output that leaves Version as it is would
// leave them running modules instrumented the old way.
func TestInstrumentPinned(t *testing.T) {
	out, err := Instrument(testModule(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(out)); got != instrumentedSum || Version != 1 {
		t.Errorf("Instrument's output changed (SHA-256 %s, pinned %s at Version 1; Version is %d): "+
			"increase Version, then pin the new sum and Version here", got, instrumentedSum, Version)
	}
}
