package wasmtest

// FakeModule returns a minimal WASM plugin module, compiled in
// milliseconds, with every export of the ABI (requests are the request
// functions, wasmhost.Funcs()): plugin_api_version returns version,
// every request answers empty, malloc returns 0 (so any non-empty
// request breaks the ABI). With badMalloc, malloc has free's signature.
func FakeModule(version int64, badMalloc bool, requests []string) []byte {
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
	s64 := func(v int64) []byte { // signed LEB128
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
				return append(b, c)
			}
			b = append(b, c|0x80)
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
	mallocIdx := byte(2)
	if badMalloc {
		mallocIdx = 3
	}
	exports := [][]byte{
		append(name("plugin_api_version"), 0x00, 0),
		append(name("malloc"), 0x00, mallocIdx),
		append(name("free"), 0x00, 3),
		append(name("memory"), 0x02, 0),
	}
	for _, fn := range requests {
		exports = append(exports, append(name(fn), 0x00, 1))
	}
	code := vec(4,
		body(append(append([]byte{0x42}, s64(version)...), 0x0b)...), // i64.const version
		body(0x42, 0x00, 0x0b), // i64.const 0
		body(0x41, 0x00, 0x0b), // i32.const 0
		body(0x0b),
	)
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, types)...)
	m = append(m, section(3, funcs)...)
	m = append(m, section(5, vec(1, []byte{0x00, 0x01}))...) // one memory, min 1 page
	m = append(m, section(7, vec(len(exports), exports...))...)
	return append(m, section(10, code)...)
}
