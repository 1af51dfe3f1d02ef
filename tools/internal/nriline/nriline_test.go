package nriline

import "testing"

func TestPairs(t *testing.T) {
	a, err := Pairs(`path=a.b name="two words" group`)
	if err != nil || a["path"] != "a.b" || a["name"] != "two words" || !hasKey(a, "group") || len(a) != 3 {
		t.Errorf("Pairs = %v, %v", a, err)
	}
	for _, bad := range []string{`name="open`, `a=1 a=2`, `=x`} {
		if _, err := Pairs(bad); err == nil {
			t.Errorf("Pairs(%q) accepted", bad)
		}
	}
}

func hasKey(a map[string]string, k string) bool {
	_, ok := a[k]
	return ok
}

func TestLine(t *testing.T) {
	if l, ok := Line("A comment.\n nri: path=x name=y \n"); !ok || l != "path=x name=y" {
		t.Errorf("Line = %q, %v", l, ok)
	}
	if _, ok := Line("no line\n"); ok {
		t.Error("Line found a line in a comment without one")
	}
}
