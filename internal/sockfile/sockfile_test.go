//go:build unix

package sockfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestListen(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "nri.sock")
	// A stale socket at the path is replaced.
	must(t, os.WriteFile(path, nil, 0o666))
	var bound string
	l, err := Listen(path, func(p string) {
		bound = p
		info, err := os.Stat(filepath.Dir(p))
		must(t, err)
		if perm := info.Mode().Perm(); perm != 0o700 {
			t.Errorf("socket bound in a directory of mode %o, want 700", perm)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("the old file at the path is gone before the socket took its place: %v", err)
		}
	})
	must(t, err)
	if filepath.Dir(filepath.Dir(bound)) != dir {
		t.Errorf("socket bound at %s, not in a directory next to %s", bound, path)
	}
	info, err := os.Lstat(path)
	must(t, err)
	if info.Mode()&fs.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", info.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v, want the socket only", entries)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", path)
	must(t, err)
	c.Close()
	must(t, <-accepted)
	must(t, l.Close())
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	must(t, l.Close())
}

// TestCloseLeavesOtherFile: Close does not remove a file that replaced
// the socket.
func TestCloseLeavesOtherFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nri.sock")
	l, err := Listen(path, nil)
	must(t, err)
	must(t, os.Remove(path))
	must(t, os.WriteFile(path, []byte("someone else's"), 0o600))
	must(t, l.Close())
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Close removed a file that was not its socket: %v", err)
	}
}

func TestListenPathTooLong(t *testing.T) {
	// The socket's own path fits, the private one does not.
	tmp := t.TempDir()
	dir := filepath.Join(tmp, strings.Repeat("d", maxPath-len("/nri.sock")-len(tmp)-1))
	must(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "nri.sock")
	if len(path) != maxPath {
		t.Fatalf("test path is %d bytes long", len(path))
	}
	_, err := Listen(path, nil)
	if err == nil || !strings.Contains(err.Error(), "socket path "+path+" is too long: a unix socket path may have 107 bytes") ||
		strings.Contains(err.Error(), "/s") {
		t.Fatalf("Listen: %v, want the path named too long, not the private path", err)
	}
	if err := CheckPath(filepath.Join(tmp, "nri.sock")); err != nil {
		t.Errorf("CheckPath of a short path: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("directory holds %v after a failed Listen", entries)
	}
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	must(t, os.WriteFile(file, nil, 0o600))
	for _, tc := range []struct {
		mode fs.FileMode
		want string
	}{
		{0o700, ""},
		{0o755, ""},
		{0o775, "is writable by other users (mode drwxrwxr-x)"},
		{fs.ModeSticky | 0o777, "is writable by other users (mode dtrwxrwxrwx)"},
	} {
		must(t, os.Chmod(dir, tc.mode))
		err := CheckDir(dir)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("mode %v: %v", tc.mode, err)
		case tc.want != "" && (err == nil || err.Error() != "socket directory "+dir+" "+tc.want):
			t.Errorf("mode %v: %v, want %q", tc.mode, err, tc.want)
		}
	}
	must(t, os.Chmod(dir, 0o700))
	if err := CheckDir(file); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file: %v", err)
	}
	if err := CheckDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
