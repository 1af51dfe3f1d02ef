package outputsummary

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeepsTheCause: a plugin's first lines (where the cause of
// a failure usually is) survive a long stack trace after them, and the
// last lines too, with a marker for what was left out.
func TestKeepsTheCause(t *testing.T) {
	b := New(1024, nil)
	fmt.Fprintln(b, "plugin: open /etc/plugin.conf: no such file or directory")
	for i := range 500 {
		fmt.Fprintf(b, "goroutine frame %d\n", i)
	}
	fmt.Fprintln(b, "exit status 2")
	got := b.String()
	if !strings.HasPrefix(got, "plugin: open /etc/plugin.conf: no such file or directory | ") ||
		!strings.Contains(got, " | ... | ") || !strings.HasSuffix(got, "goroutine frame 499 | exit status 2") {
		t.Errorf("kept %q", got)
	}
	if n := strings.Count(got, " | "); n > headLines+tailLines+1 {
		t.Errorf("kept %d lines: %q", n+1, got)
	}

	short := New(1024, nil)
	fmt.Fprint(short, "one\ntwo\n")
	if got := short.String(); got != "one | two" {
		t.Errorf("short output kept as %q", got)
	}
}

// TestTee: everything written reaches the tee, not only what is kept.
func TestTee(t *testing.T) {
	var all strings.Builder
	b := New(16, &all)
	for i := range 100 {
		fmt.Fprintf(b, "line %d\n", i)
	}
	if n := strings.Count(all.String(), "\n"); n != 100 {
		t.Errorf("the tee got %d lines, want 100", n)
	}
	if got := b.String(); !strings.HasSuffix(got, "line 99") || strings.Contains(got, "line 50") {
		t.Errorf("kept %q", got)
	}
}
