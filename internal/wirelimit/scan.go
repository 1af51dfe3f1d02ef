package wirelimit

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// Scanner checks one message of a [Schema] fed to it in pieces, as it
// is read: [Scanner.Reset] starts a message of a known length,
// [Scanner.Feed] takes its bytes in any pieces, [Scanner.Close] checks
// that it ended where it should. It keeps no reference to what it is
// fed and does not allocate. The zero value is ready for Reset.
type Scanner struct {
	s      *Schema
	pos    int // bytes fed
	depth  int // index of the innermost frame
	frames [MaxDepth + 1]frame

	// The field being read: the state, the field (nil if unknown), and
	// the varint read so far (v, of vn bytes) or the bytes left of its
	// value.
	st   state
	f    *field
	v    uint64
	vn   int
	left int

	values int
	counts [maxFieldCaps]int
	err    error
}

// frame is a message being scanned.
type frame struct {
	n *node // nil: an unknown group, all of whose fields are unknown
	// end is where the innermost length-delimited message around (or
	// at) this frame ends.
	end int
	// group is the field number of a group, 0 for a message that is
	// length-delimited (or the whole message).
	group protowire.Number
}

// state is what the next byte is.
type state uint8

const (
	stTag    state = iota // a tag, or the end of the message
	stVarint              // a varint value to skip
	stLen                 // the length of a length-delimited value
	stSkip                // the bytes of a value to skip (left of them)
	stPacked              // a packed run of varints (left bytes of it)
)

// Reset starts the scan of one message of s that is size bytes long.
func (sc *Scanner) Reset(s *Schema, size int) {
	*sc = Scanner{s: s}
	sc.frames[0] = frame{n: s.root, end: size}
}

// Values returns the values counted so far (see [Limits]).
func (sc *Scanner) Values() int { return sc.values }

// Feed scans the next bytes of the message. It returns a *[LimitError]
// as soon as the message exceeds the limits, an error wrapping
// [ErrMalformed] as soon as it cannot be a valid encoding (including
// bytes past the size given to Reset), and nil otherwise; after an error
// it returns the same error.
func (sc *Scanner) Feed(p []byte) error {
	for len(p) > 0 && sc.err == nil {
		top := &sc.frames[sc.depth]
		if sc.pos == top.end {
			if !sc.pop() {
				break
			}
			continue
		}
		avail := min(len(p), top.end-sc.pos)
		var n int
		switch sc.st {
		case stTag, stVarint, stLen:
			if sc.vn == 0 && p[0] < 0x80 { // a one-byte varint: most tags and lengths
				sc.v = uint64(p[0])
				sc.pos++
				p = p[1:]
				sc.varintDone()
				continue
			}
			var done bool
			n, done = sc.varint(p[:avail])
			sc.pos += n
			p = p[n:]
			if done {
				sc.varintDone()
			}
			continue
		case stSkip:
			n = min(avail, sc.left)
			sc.left -= n
			if sc.left == 0 {
				sc.st = stTag
			}
		case stPacked:
			n = min(avail, sc.left)
			for _, c := range p[:n] {
				if c < 0x80 {
					sc.count(sc.f, 1)
				}
			}
			sc.left -= n
			if sc.left == 0 {
				if p[n-1] >= 0x80 {
					sc.fail(malformed("a packed varint runs past its field"))
				}
				sc.st = stTag
			}
		}
		sc.pos += n
		p = p[n:]
	}
	if len(p) > 0 && sc.err == nil {
		sc.fail(malformed("more bytes than the message's length"))
	}
	return sc.err
}

// pop ends the innermost frame at its end; false (with the error set) if
// the message cannot end there.
func (sc *Scanner) pop() bool {
	top := &sc.frames[sc.depth]
	switch {
	case sc.st != stTag || sc.vn != 0:
		sc.fail(malformed("a field runs past the end of its message"))
	case top.group != 0:
		sc.fail(malformed("a group is not ended"))
	case sc.depth == 0:
		sc.fail(malformed("more bytes than the message's length"))
	default:
		sc.depth--
		return true
	}
	return false
}

// Close reports whether the message fed so far is complete: it returns
// the error of Feed, or one wrapping [ErrMalformed] if the message is
// shorter than its size or ends within a field or group.
func (sc *Scanner) Close() error {
	if sc.err != nil {
		return sc.err
	}
	for sc.depth > 0 && sc.pos == sc.frames[sc.depth].end {
		if !sc.pop() {
			return sc.err
		}
	}
	switch {
	case sc.pos != sc.frames[0].end:
		sc.fail(malformed("the message is truncated"))
	case sc.depth != 0 || sc.st != stTag || sc.vn != 0:
		sc.fail(malformed("the message ends within a field"))
	}
	return sc.err
}

// varint takes the bytes of the varint being read (a tag, a value or a
// length) from p, none beyond the current message, and returns how many
// it took and whether the varint is complete.
func (sc *Scanner) varint(p []byte) (int, bool) {
	for i, c := range p {
		if sc.vn == 9 && c > 1 {
			sc.fail(malformed("a varint overflows 64 bits"))
			return i + 1, false
		}
		sc.v |= uint64(c&0x7f) << (7 * sc.vn)
		sc.vn++
		if c < 0x80 {
			return i + 1, true
		}
	}
	return len(p), false
}

// varintDone acts on the varint just read.
func (sc *Scanner) varintDone() {
	v := sc.v
	sc.v, sc.vn = 0, 0
	switch sc.st {
	case stTag:
		sc.tag(v)
	case stVarint:
		sc.st = stTag
	case stLen:
		sc.length(v)
	}
}

// tag acts on the tag v of a field: it counts the field and sets how its
// value is read.
func (sc *Scanner) tag(v uint64) {
	top := &sc.frames[sc.depth]
	num, wt := protowire.Number(v>>3), protowire.Type(v&7)
	if v>>3 < uint64(protowire.MinValidNumber) || v>>3 > uint64(protowire.MaxValidNumber) {
		sc.fail(malformed("invalid field number"))
		return
	}
	f := top.n.lookup(num)
	if f != nil && wt != f.elem && !(f.packable && f.list && wt == protowire.BytesType) {
		f = nil // an unexpected wire type: decoded as an unknown field
	}
	sc.f = f
	switch wt {
	case protowire.VarintType:
		sc.count(f, 1)
		sc.st = stVarint
	case protowire.Fixed32Type:
		sc.count(f, 1)
		sc.st, sc.left = stSkip, 4
	case protowire.Fixed64Type:
		sc.count(f, 1)
		sc.st, sc.left = stSkip, 8
	case protowire.BytesType:
		sc.st = stLen
	case protowire.StartGroupType:
		var n *node
		if f != nil && f.group {
			sc.count(f, 1)
			n = f.msg
		}
		sc.push(frame{n: n, end: top.end, group: num})
	case protowire.EndGroupType:
		if top.group != num {
			sc.fail(malformed("a group ends that is not open"))
			return
		}
		sc.depth--
	default:
		sc.fail(malformed("invalid wire type"))
	}
}

// length acts on the length n of a length-delimited field.
func (sc *Scanner) length(n uint64) {
	top := &sc.frames[sc.depth]
	if n > uint64(top.end-sc.pos) {
		sc.fail(malformed("a field is longer than its message"))
		return
	}
	f, size := sc.f, int(n)
	sc.st, sc.left = stSkip, size
	switch {
	case f == nil:
	case f.msg != nil:
		sc.count(f, 1)
		sc.st = stTag
		sc.push(frame{n: f.msg, end: sc.pos + size})
	case f.elem == protowire.BytesType: // a string or bytes element
		sc.count(f, 1)
	case f.elem == protowire.Fixed32Type, f.elem == protowire.Fixed64Type:
		width := 4
		if f.elem == protowire.Fixed64Type {
			width = 8
		}
		if size%width != 0 {
			sc.fail(malformed("a packed field of fixed-size values has a partial value"))
			return
		}
		sc.count(f, size/width)
	default: // a packed run of varints, counted as it is read
		sc.st = stPacked
	}
	if sc.left == 0 && sc.st != stTag {
		sc.st = stTag
	}
}

// push enters a nested message or group.
func (sc *Scanner) push(fr frame) {
	if sc.depth == MaxDepth {
		sc.fail(&LimitError{Message: sc.s.name, What: "nesting depth", Limit: MaxDepth})
		return
	}
	sc.depth++
	sc.frames[sc.depth] = fr
}

// count counts n values of field f (nothing for a nil f, an unknown
// field) and checks the limits.
func (sc *Scanner) count(f *field, n int) {
	if f == nil || f.weight == 0 {
		return
	}
	sc.values += n * f.weight
	if sc.s.values > 0 && sc.values > sc.s.values {
		sc.fail(&LimitError{Message: sc.s.name, What: "values", Limit: sc.s.values})
		return
	}
	if f.capped >= 0 {
		sc.counts[f.capped] += n
		if c := sc.s.caps[f.capped]; sc.counts[f.capped] > c.limit {
			sc.fail(&LimitError{Message: sc.s.name, Field: c.name, Limit: c.limit})
		}
	}
}

// fail records the scan's error (the first one).
func (sc *Scanner) fail(err error) {
	if sc.err == nil {
		sc.err = err
	}
}
