package allow

import (
	"strings"
	"testing"
)

func TestNamespaces(t *testing.T) {
	n := Namespaces{"ml", "team-*", "lab-[ab]"}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"ml": true, "team-x": true, "lab-a": true, "lab-c": false, "mlx": false, "default": false, "": false} {
		if got := n.Allows(ns); got != want {
			t.Errorf("Allows(%q) = %v, want %v", ns, got, want)
		}
	}
	if !(Namespaces{}).Allows("kube-system") {
		t.Error("an empty list does not allow every namespace")
	}
	for _, bad := range []Namespaces{{""}, {"ml", "["}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%q validated", bad)
		}
	}
}

// TestQuote: a value is quoted whole up to MaxQuoted bytes, cut on a rune
// boundary with its length noted beyond.
func TestQuote(t *testing.T) {
	if got := Quote("a\nb"); got != `"a\nb"` {
		t.Errorf("Quote = %s", got)
	}
	long := strings.Repeat("é", MaxQuoted) // 2 bytes each
	got := Quote(long)
	if !strings.HasSuffix(got, "... (256 bytes)") || len(got) > MaxQuoted+len(`""... (256 bytes)`) || strings.Contains(got, `\x`) {
		t.Errorf("Quote(256 bytes) = %s", got)
	}
}

func TestRefusal(t *testing.T) {
	r := &Refusal{Annotation: "mounts.noderesource.dev/pod", Entry: "mount 2", Value: "/ on /host", Reason: "not allowed"}
	if got, want := r.Error(), `annotation mounts.noderesource.dev/pod: mount 2 "/ on /host" refused: not allowed`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
	r.Entry = ""
	if got, want := r.Error(), `annotation mounts.noderesource.dev/pod: "/ on /host" refused: not allowed`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
	r.Value = strings.Repeat("x", 10000)
	if len(r.Error()) > 300 {
		t.Errorf("a 10000-byte value gives a %d-byte error", len(r.Error()))
	}
}

func TestAnnotation(t *testing.T) {
	a := map[string]string{"k/container.c": "1", "k/pod": "2", "k": "3", "j": "4"}
	for _, tc := range []struct{ key, ctr, wantKey, want string }{
		{"k", "c", "k/container.c", "1"}, {"k", "d", "k/pod", "2"}, {"j", "c", "j", "4"},
	} {
		if k, v, ok := Annotation(a, tc.key, tc.ctr); !ok || k != tc.wantKey || v != tc.want {
			t.Errorf("Annotation(%s, %s) = %s, %s, %v", tc.key, tc.ctr, k, v, ok)
		}
	}
	if _, _, ok := Annotation(a, "x", "c"); ok {
		t.Error("found a missing annotation")
	}
}

func TestHasDotDot(t *testing.T) {
	for p, want := range map[string]bool{"/a/../b": true, "..": true, "/a/..": true, "/a/..b": false, "/a/b..": false, "/a/./b": false} {
		if got := HasDotDot(p); got != want {
			t.Errorf("HasDotDot(%q) = %v", p, got)
		}
	}
}
