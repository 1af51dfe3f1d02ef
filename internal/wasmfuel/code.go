package wasmfuel

import "fmt"

// elements rewrites the element section's function indices.
func (in *instrumenter) elements(r *reader, n uint32) ([]byte, error) {
	out := appendU32(nil, n)
	for i := uint32(0); i < n; i++ {
		flags, err := r.u32()
		if err != nil {
			return nil, err
		}
		if flags > 7 {
			return nil, fmt.Errorf("element segment flags %d", flags)
		}
		out = appendU32(out, flags)
		if flags&3 == 2 { // explicit table index
			t, err := r.u32()
			if err != nil {
				return nil, err
			}
			out = appendU32(out, t)
		}
		if flags&1 == 0 { // active: offset expression
			if out, err = in.constExpr(out, r); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // elemkind (0x00) or reftype
			k, err := r.byte()
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		m, err := r.u32()
		if err != nil {
			return nil, err
		}
		out = appendU32(out, m)
		for j := uint32(0); j < m; j++ {
			if flags&4 != 0 {
				out, err = in.constExpr(out, r)
			} else {
				var f uint32
				if f, err = r.u32(); err == nil {
					f, err = in.fn(f)
					out = appendU32(out, f)
				}
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// constExpr copies a constant expression up to its end, renumbering ref.func.
func (in *instrumenter) constExpr(out []byte, r *reader) ([]byte, error) {
	depth := 0
	for {
		op, err := r.byte()
		if err != nil {
			return nil, err
		}
		if out, err = in.instr(out, r, op, false); err != nil {
			return nil, err
		}
		switch op {
		case 0x02, 0x03, 0x04:
			depth++
		case 0x0b:
			if depth == 0 {
				return out, nil
			}
			depth--
		}
	}
}

// code rewrites the function bodies.
func (in *instrumenter) code(r *reader, n uint32) ([]byte, error) {
	out := appendU32(make([]byte, 0, len(r.b)+len(r.b)/4), n)
	var body []byte
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		b, err := r.bytes(int(size))
		if err != nil {
			return nil, err
		}
		br := &reader{b: b}
		// Locals: vec(count valtype).
		nl, err := br.u32()
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		for j := uint32(0); j < nl; j++ {
			if _, err := br.u32(); err != nil {
				return nil, fmt.Errorf("function %d: %w", i, err)
			}
			if err := br.valtype(); err != nil {
				return nil, fmt.Errorf("function %d: %w", i, err)
			}
		}
		body = append(body[:0], b[:br.pos]...)
		if br.pos >= len(b) || b[br.pos] != 0x03 {
			// Count the entry, unless the body starts with a loop
			// (as a Go function does), whose header counts it.
			body = append(body, in.inject...)
		}
		for !br.eof() {
			op, _ := br.byte()
			if body, err = in.instr(body, br, op, true); err != nil {
				return nil, fmt.Errorf("function %d at %d: %w", i, br.pos, err)
			}
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// valtype skips a value type (a single byte, or a reference type with a
// heap type index under the GC proposal).
func (r *reader) valtype() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	if c == 0x63 || c == 0x64 { // (ref null? ht)
		return r.skipLEB(5)
	}
	return nil
}

// blocktype skips a block type: 0x40, a value type, or an s33 type index.
func (r *reader) blocktype() error {
	if r.pos >= len(r.b) {
		return errTruncated
	}
	c := r.b[r.pos]
	if c == 0x40 || (c >= 0x6f && c <= 0x7f && c&0x80 == 0) {
		r.pos++
		return nil
	}
	if c == 0x63 || c == 0x64 {
		r.pos++
		return r.skipLEB(5)
	}
	return r.skipLEB(5) // s33
}

// memarg skips a memory argument (align, with bit 6 a memory index, offset).
func (r *reader) memarg() error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return r.skipLEB(10)
}

// instr copies one instruction whose opcode op was just read, renumbering
// function indices and, in a body (inject), counting at each loop header.
func (in *instrumenter) instr(out []byte, r *reader, op byte, inject bool) ([]byte, error) {
	start := r.pos
	var err error
	switch {
	case op == 0x10 || op == 0x12 || op == 0xd2: // call, return_call, ref.func
		var f uint32
		if f, err = r.u32(); err != nil {
			return nil, err
		}
		if f, err = in.fn(f); err != nil {
			return nil, err
		}
		return appendU32(append(out, op), f), nil
	case op == 0x03: // loop
		if err = r.blocktype(); err != nil {
			return nil, err
		}
		out = append(append(out, op), r.b[start:r.pos]...)
		if inject {
			out = append(out, in.inject...)
		}
		return out, nil
	case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b, op == 0xd1,
		op >= 0x45 && op <= 0xc4:
	case op == 0x02 || op == 0x04: // block, if
		err = r.blocktype()
	case op == 0x23 || op == 0x24: // global.get, global.set
		var g uint32
		if g, err = r.u32(); err == nil {
			err = in.global(g)
		}
	case op == 0x0c || op == 0x0d || (op >= 0x20 && op <= 0x26):
		_, err = r.u32()
	case op == 0x0e: // br_table
		var n uint32
		if n, err = r.u32(); err == nil {
			for i := uint32(0); i <= n && err == nil; i++ {
				_, err = r.u32()
			}
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		if _, err = r.u32(); err == nil {
			_, err = r.u32()
		}
	case op == 0x1c: // select t*
		var n uint32
		if n, err = r.u32(); err == nil {
			for i := uint32(0); i < n && err == nil; i++ {
				err = r.valtype()
			}
		}
	case op >= 0x28 && op <= 0x3e:
		err = r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		_, err = r.u32()
	case op == 0x41:
		err = r.skipLEB(5)
	case op == 0x42:
		err = r.skipLEB(10)
	case op == 0x43:
		_, err = r.bytes(4)
	case op == 0x44:
		_, err = r.bytes(8)
	case op == 0xd0: // ref.null ht
		err = r.blocktype()
	case op == 0xfc:
		err = r.prefixFC()
	case op == 0xfd:
		err = r.prefixFD()
	case op == 0xfe:
		err = r.prefixFE()
	default:
		return nil, fmt.Errorf("unknown opcode 0x%02x", op)
	}
	if err != nil {
		return nil, err
	}
	return append(append(out, op), r.b[start:r.pos]...), nil
}

// prefixFC skips a saturating truncation, bulk memory or table instruction.
func (r *reader) prefixFC() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 7:
		return nil
	case sub == 8 || sub == 10 || sub == 12 || sub == 14: // two indices
		if _, err := r.u32(); err != nil {
			return err
		}
		_, err = r.u32()
		return err
	case sub <= 17:
		_, err = r.u32()
		return err
	}
	return fmt.Errorf("unknown instruction 0xfc %d", sub)
}

// prefixFD skips a SIMD instruction.
func (r *reader) prefixFD() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads, stores
		return r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		_, err = r.bytes(16)
		return err
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		_, err = r.byte()
		return err
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err := r.memarg(); err != nil {
			return err
		}
		_, err = r.byte()
		return err
	case sub <= 0x113:
		return nil
	}
	return fmt.Errorf("unknown instruction 0xfd %d", sub)
}

// prefixFE skips an atomic instruction.
func (r *reader) prefixFE() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub == 3: // atomic.fence
		_, err = r.byte()
		return err
	case sub <= 2 || (sub >= 0x10 && sub <= 0x4e):
		return r.memarg()
	}
	return fmt.Errorf("unknown instruction 0xfe %d", sub)
}
