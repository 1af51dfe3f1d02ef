package policy

import (
	"slices"
	"testing"
)

// TestNamedWithoutExtension checks that a grant or required entry naming
// a WASM plugin without the extension its file name gives it is pointed
// out, and only then.
func TestNamedWithoutExtension(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(`required: [batchenv, 50-other]
grants:
  - plugins: [logger]
  - plugins: [batchenv]
    adjust: {env: [BATCH_*]}
  - plugins: ["50-other"]
default: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		idx, name string
		want      []string
	}{
		{"50", "batchenv.wasm", []string{"policy.yaml:4: grants[1] names batchenv", "required names batchenv"}},
		{"50", "other.wasm", []string{"policy.yaml:6: grants[2] names 50-other", "required names 50-other"}},
		{"50", "batchenv", nil}, // no extension: its own name
		{"10", "logger.wasm", []string{"policy.yaml:3: grants[0] names logger"}},
		{"10", "unknown.wasm", nil}, // nothing names it either way
		{"10", ".wasm", nil},        // all extension, no stem
	} {
		if got := p.NamedWithoutExtension(tc.idx, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("NamedWithoutExtension(%s, %s) = %q, want %q", tc.idx, tc.name, got, tc.want)
		}
	}
	// A plugin the policy names with its extension has its grant: nothing
	// to point out.
	q, err := Parse("policy.yaml", []byte("required: [batchenv.wasm]\ngrants:\n  - plugins: [batchenv.wasm, batchenv]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := q.NamedWithoutExtension("50", "batchenv.wasm"); got != nil {
		t.Errorf("named with its extension: %q", got)
	}
	if got := (*Policy)(nil).NamedWithoutExtension("50", "batchenv.wasm"); got != nil {
		t.Errorf("nil policy: %q", got)
	}
}
