// Package wasmfuel instruments a WebAssembly module so that a runtime can
// bound its calls without checking at every loop iteration: every loop
// header and function entry decrements a counter (a new mutable i32
// global), and only when the counter reaches zero calls an imported host
// function ([ImportModule].[ImportName], type [] -> [i32]) that checks the
// call's deadline and returns the next budget, or stops the call (in
// wazero, by panicking with a *sys.ExitError).
//
// A computation that runs forever executes a loop header or enters a
// function infinitely often (straight-line code is finite and recursion
// without a loop ends in a stack overflow, but only after up to 2^depth
// steps if a function calls itself twice; the entry counter bounds that
// too), so it reaches the host function every budget steps.
//
// The added import shifts the function index space by one: every call,
// return_call, ref.func, export, start function and element segment is
// renumbered, and the name section and DWARF custom sections, which refer
// to the old indices and offsets, are dropped.
package wasmfuel

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ImportModule and ImportName name the host function an instrumented
// module imports: it takes nothing and returns the next budget (an i32 > 0).
const (
	ImportModule = "nrikit_fuel"
	ImportName   = "refuel"
)

// Version numbers what [Instrument] writes. Runtimes keep instrumented
// modules (in their compilation caches) under it, so a change to the
// output for any module must increase it; TestInstrumentPinned fails
// until it has.
const Version = 1

var header = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// Section ids.
const (
	secCustom = 0
	secType   = 1
	secImport = 2
	secGlobal = 6
	secExport = 7
	secStart  = 8
	secElem   = 9
	secCode   = 10
)

// rank orders the non-custom sections as the binary format requires.
var rank = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

type section struct {
	id      byte
	payload []byte
}

// instrumenter holds what rewriting needs to know of the module.
type instrumenter struct {
	importedFuncs   uint32
	importedGlobals uint32
	definedGlobals  uint32
	definedFuncs    uint32
	types           uint32
	fuel            int32
	inject          []byte // the counter sequence
}

// Instrument returns the module code with a fuel counter at every loop
// header and function entry, starting at (and refilled by the host
// function to) budget. It fails on a malformed module or an instruction
// it does not know; the result still has to be validated by the runtime.
func Instrument(code []byte, budget int32) ([]byte, error) {
	if budget <= 0 {
		return nil, errors.New("wasmfuel: budget must be positive")
	}
	if !bytes.HasPrefix(code, header) {
		return nil, errors.New("wasmfuel: not a WebAssembly 1.0 binary")
	}
	r := &reader{b: code, pos: len(header)}
	var secs []section
	for !r.eof() {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		n, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("wasmfuel: section %d size: %w", id, err)
		}
		p, err := r.bytes(int(n))
		if err != nil {
			return nil, fmt.Errorf("wasmfuel: section %d: %w", id, err)
		}
		if id != secCustom && rank[id] == 0 {
			return nil, fmt.Errorf("wasmfuel: unknown section %d", id)
		}
		secs = append(secs, section{id, p})
	}
	in := &instrumenter{fuel: budget}
	for _, s := range secs {
		var err error
		switch s.id {
		case secType:
			in.types, err = (&reader{b: s.payload}).u32()
		case secImport:
			err = in.countImports(s.payload)
		case secGlobal:
			in.definedGlobals, err = (&reader{b: s.payload}).u32()
		case 3:
			in.definedFuncs, err = (&reader{b: s.payload}).u32()
		}
		if err != nil {
			return nil, fmt.Errorf("wasmfuel: section %d: %w", s.id, err)
		}
	}
	g := in.importedGlobals + in.definedGlobals
	f := in.importedFuncs
	in.inject = appendU32([]byte{0x23}, g)          // global.get g
	in.inject = append(in.inject, 0x41, 0x01, 0x6b) // i32.const 1; i32.sub
	in.inject = appendU32(append(in.inject, 0x24), g)
	in.inject = appendU32(append(in.inject, 0x23), g)
	in.inject = append(in.inject, 0x45, 0x04, 0x40) // i32.eqz; if
	in.inject = appendU32(append(in.inject, 0x10), f)
	in.inject = appendU32(append(in.inject, 0x24), g)
	in.inject = append(in.inject, 0x0b) // end

	out := append(make([]byte, 0, len(code)+len(code)/4), header...)
	added := map[byte]bool{}
	addMissing := func(before int) {
		for _, id := range []byte{secType, secImport, secGlobal} {
			if !added[id] && rank[id] < before {
				added[id] = true
				p, _ := in.rewrite(id, nil)
				out = appendSection(out, id, p)
			}
		}
	}
	for _, s := range secs {
		if s.id == secCustom {
			name, err := (&reader{b: s.payload}).name()
			if err != nil {
				return nil, fmt.Errorf("wasmfuel: custom section: %w", err)
			}
			if name == "name" || strings.HasPrefix(name, ".debug_") {
				continue
			}
			out = appendSection(out, s.id, s.payload)
			continue
		}
		addMissing(rank[s.id])
		p, err := in.rewrite(s.id, s.payload)
		if err != nil {
			return nil, fmt.Errorf("wasmfuel: section %d: %w", s.id, err)
		}
		added[s.id] = true
		out = appendSection(out, s.id, p)
	}
	addMissing(100)
	return out, nil
}

func appendSection(out []byte, id byte, p []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(p)))
	return append(out, p...)
}

// name reads a name (a length-prefixed string).
func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n))
	return string(b), err
}

// fn maps a function index of the original module to the instrumented
// one. An index out of the original's range is an error: after the shift
// it could name the host function.
func (in *instrumenter) fn(i uint32) (uint32, error) {
	if uint64(i) >= uint64(in.importedFuncs)+uint64(in.definedFuncs) {
		return 0, fmt.Errorf("function index %d out of range", i)
	}
	if i < in.importedFuncs {
		return i, nil
	}
	return i + 1, nil
}

// global checks a global index of the original module: one out of its
// range would, after instrumentation, name the counter.
func (in *instrumenter) global(i uint32) error {
	if uint64(i) >= uint64(in.importedGlobals)+uint64(in.definedGlobals) {
		return fmt.Errorf("global index %d out of range", i)
	}
	return nil
}

// countImports counts the imported functions and globals.
func (in *instrumenter) countImports(p []byte) error {
	r := &reader{b: p}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if _, err := r.name(); err != nil {
			return err
		}
		if _, err := r.name(); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0: // func: typeidx
			in.importedFuncs++
			_, err = r.u32()
		case 1: // table: reftype limits
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case 2: // memory: limits
			err = r.limits()
		case 3: // global: valtype mut
			in.importedGlobals++
			_, err = r.bytes(2)
		case 4: // tag: attribute typeidx
			if _, err = r.byte(); err == nil {
				_, err = r.u32()
			}
		default:
			err = fmt.Errorf("unknown import kind %d", kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// limits skips a table's or memory's limits.
func (r *reader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if err := r.skipLEB(10); err != nil {
		return err
	}
	if flags&1 != 0 {
		return r.skipLEB(10)
	}
	return nil
}

// rewrite returns the instrumented payload of a non-custom section (nil
// payload: the section is missing and only gets the additions).
func (in *instrumenter) rewrite(id byte, p []byte) ([]byte, error) {
	r := &reader{b: p}
	var n uint32
	if p != nil {
		var err error
		if n, err = r.u32(); err != nil {
			return nil, err
		}
	}
	switch id {
	case secType: // append [] -> [i32]
		out := appendU32(nil, n+1)
		out = append(out, p[r.pos:]...)
		return append(out, 0x60, 0x00, 0x01, 0x7f), nil
	case secImport: // append the host function
		out := appendU32(nil, n+1)
		out = append(out, p[r.pos:]...)
		out = appendName(appendName(out, ImportModule), ImportName)
		return appendU32(append(out, 0x00), in.types), nil
	case secGlobal: // rewrite ref.func in the initialisers, append the counter
		out := appendU32(nil, n+1)
		for i := uint32(0); i < n; i++ {
			t, err := r.bytes(2)
			if err != nil {
				return nil, err
			}
			if out, err = in.constExpr(append(out, t...), r); err != nil {
				return nil, err
			}
		}
		out = append(out, 0x7f, 0x01, 0x41)
		return append(appendS32(out, in.fuel), 0x0b), nil
	case secExport:
		out := appendU32(nil, n)
		for i := uint32(0); i < n; i++ {
			name, err := r.name()
			if err != nil {
				return nil, err
			}
			kind, err := r.byte()
			if err != nil {
				return nil, err
			}
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			switch kind {
			case 0:
				idx, err = in.fn(idx)
			case 3:
				err = in.global(idx)
			}
			if err != nil {
				return nil, err
			}
			out = appendU32(append(appendName(out, name), kind), idx)
		}
		return out, nil
	case secStart:
		f, err := in.fn(n)
		return appendU32(nil, f), err
	case secElem:
		return in.elements(r, n)
	case secCode:
		return in.code(r, n)
	}
	return p, nil
}
