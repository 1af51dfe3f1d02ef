package fastdecode

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzUnmarshal decodes arbitrary bytes as each fast type with both
// decoders: both must fail, or both succeed with proto.Equal results (see
// diffDecode: the fast decoder's message is prefilled, and its input is
// overwritten afterwards to catch aliasing), and the TrustUTF8 decoder
// agrees with protobuf-go as diffTrusted says.
func FuzzUnmarshal(f *testing.F) {
	// Small seeds keep executions (and minimization) fast; fully populated
	// messages are covered by TestRoundTrip.
	for i, typ := range fastTypes {
		b := leanFull(typ)
		f.Add(uint8(i), b)
		for _, cut := range []int{1, 2, 5, len(b) / 3, len(b) / 2, len(b) - 2, len(b) - 1} {
			f.Add(uint8(i), b[:cut])
		}
	}
	for _, tc := range allCases() {
		f.Add(uint8(typeIndex(tc.typ)), tc.b)
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		typ := fastTypes[int(which)%len(fastTypes)]
		if d := diffDecode(typ, data, Unmarshal); d != "" {
			t.Fatal(d)
		}
		if d := diffTrusted(typ, data); d != "" {
			t.Fatal("TrustUTF8: " + d)
		}
	})
}

func typeIndex(m proto.Message) int {
	for i, typ := range fastTypes {
		if name(typ) == name(m) {
			return i
		}
	}
	panic("not a fast type: " + name(m))
}
