package filearg

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "u")
	if err := os.WriteFile(unreadable, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{file, ""},
		{filepath.Join(dir, "missing"), "no such file"},
		{dir, "a directory, not a file"},
		{filepath.Join(file, "below"), "not a directory"},
	} {
		got := ""
		if err := Check(tc.path); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Check(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if os.Geteuid() != 0 { // root reads every file
		if err := Check(unreadable); err == nil || err.Error() != "not readable: permission denied" {
			t.Errorf("Check(unreadable) = %v", err)
		}
	}
}
