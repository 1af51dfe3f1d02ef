package adaptation

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unregisteredCount returns how many connections have not registered.
func (a *Adaptation) unregisteredCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unregistered
}

// holdConnections dials n connections to the socket from this process
// that never register, and reports how many the runtime kept (the
// others it closed at once). It waits for the runtime's verdict on each
// connection before dialing the next.
func holdConnections(t *testing.T, rt *testRuntime, n int) (kept int) {
	t.Helper()
	for i := range n {
		c, err := net.Dial("unix", rt.socket)
		must(t, err)
		t.Cleanup(func() { c.Close() })
		deadline := time.Now().Add(hangGuard)
		for {
			if rt.a.unregisteredCount() == kept+1 {
				kept++
				break
			}
			must(t, c.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
				break // refused
			}
			if time.Now().After(deadline) {
				t.Fatalf("connection %d: neither counted nor closed", i)
			}
		}
	}
	return kept
}

// TestPendingConnectionsPerPeer: one process holding as many
// unregistered connections as it can does not keep another process's
// plugin from registering.
func TestPendingConnectionsPerPeer(t *testing.T) {
	rt := newTestRuntime(t, nil)
	rt.start(t)
	kept := holdConnections(t, rt, DefaultMaxPendingConnections)
	t.Logf("this process holds %d unregistered connections", kept)
	startExternal(t, rt.logs, "other", helperArgs("stub", "-socket", rt.socket, "-name", "other", "-idx", "20"))
	if got := rt.logs.wait(t, "registration answer", output("other", "REGISTER")).msg; got != "REGISTER ok" {
		t.Errorf("plugin of another process got %q, want REGISTER ok", got)
	}
	if kept != DefaultMaxPendingConnectionsPerPeer {
		t.Errorf("one process holds %d unregistered connections, want %d", kept, DefaultMaxPendingConnectionsPerPeer)
	}
	rt.logs.wait(t, "refusal naming this process", func(r logRecord) bool {
		return r.msg == "refusing plugin connection: too many connections of its process have not registered yet" &&
			r.attrs["pid"] == strconv.Itoa(os.Getpid()) && r.attrs["limit"] == strconv.Itoa(DefaultMaxPendingConnectionsPerPeer)
	})
}

// withAfterBind calls f with the path of the socket as soon as it is
// bound, before Start goes on.
func withAfterBind(f func(path string)) Option {
	return func(c *config) error { c.afterBind = f; return nil }
}

// reachable says whether a user other than the socket's owner could
// connect to the unix socket at path: it is writable by them and its
// directory is searchable by them.
func reachable(t *testing.T, path string) bool {
	t.Helper()
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	must(t, err)
	dir, err := os.Stat(filepath.Dir(path))
	must(t, err)
	return info.Mode().Perm()&0o022 != 0 && dir.Mode().Perm()&0o011 != 0
}

// TestSocketNeverReachable: the socket cannot be connected to by other
// users at any time, whatever the umask, even in a directory others can
// search: it is bound where only its owner can reach it and appears at
// its path with mode 0600.
func TestSocketNeverReachable(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	var (
		rt    *testRuntime
		bound []string
	)
	rt = newTestRuntime(t, nil, withAfterBind(func(path string) {
		bound = append(bound, path)
		for _, p := range []string{path, rt.socket} {
			if reachable(t, p) {
				t.Errorf("socket %s reachable by other users once bound", p)
			}
		}
	}))
	must(t, os.MkdirAll(filepath.Dir(rt.socket), 0o755))
	must(t, os.Chmod(filepath.Dir(rt.socket), 0o755))
	rt.start(t)
	if len(bound) != 1 {
		t.Fatalf("socket bound %d times", len(bound))
	}
	info, err := os.Lstat(rt.socket)
	must(t, err)
	if info.Mode()&fs.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", info.Mode())
	}
	entries, err := os.ReadDir(filepath.Dir(rt.socket))
	must(t, err)
	if len(entries) != 1 {
		t.Errorf("socket directory holds %v, want the socket only", entries)
	}
	c, err := net.Dial("unix", rt.socket)
	must(t, err)
	c.Close()
}

// TestSocketDirectoryChecked: Start refuses a socket directory that
// another user owns or that others can write to, naming it and why.
func TestSocketDirectoryChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		want  string
	}{
		{"writable by others", func(dir string) error { return os.Chmod(dir, 0o777) },
			"is writable by other users (mode drwxrwxrwx)"},
		{"writable by its group", func(dir string) error { return os.Chmod(dir, 0o770) },
			"is writable by other users (mode drwxrwx---)"},
		{"owned by another user", func(dir string) error {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the directory away")
			}
			return os.Chown(dir, 65534, 65534)
		}, "is owned by uid 65534, not by this process's uid 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newTestRuntime(t, nil)
			dir := filepath.Dir(rt.socket)
			must(t, os.Mkdir(dir, 0o700))
			must(t, tc.setup(dir))
			err := rt.a.Start(ctxT(t))
			if err == nil || !strings.Contains(err.Error(), "socket directory "+dir+" "+tc.want) {
				t.Fatalf("Start: %v, want an error saying the socket directory %s %s", err, dir, tc.want)
			}
		})
	}
}

// TestSocketPathTooLong: Start refuses a socket path it cannot bind, in
// the user's terms (the path, the limit, what the directory may have,
// not the private directory it binds in first), and removes the
// directories it created for it.
func TestSocketPathTooLong(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, strings.Repeat("d", 60), strings.Repeat("e", 60))
	rt := newTestRuntime(t, nil, WithSocketPath(filepath.Join(dir, "nri.sock")))
	err := rt.a.Start(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "socket path "+dir+"/nri.sock is too long") || strings.Contains(err.Error(), ".sock") && strings.Contains(err.Error(), "/s ") {
		t.Fatalf("Start: %v, want the path named too long", err)
	}
	if entries, err := os.ReadDir(base); err != nil || len(entries) != 0 {
		t.Errorf("%s holds %v (%v) after a socket path that could not be bound: want the directories made for it removed", base, entries, err)
	}
}

// TestMkdirs: the socket's missing directories are created, named
// deepest first, and removeDirs removes them again (listen does when the
// socket cannot be set up), leaving the directory that was there.
func TestMkdirs(t *testing.T) {
	base := shortTempDir(t)
	dir := filepath.Join(base, "a", "b")
	created, err := mkdirs(dir)
	must(t, err)
	if want := []string{dir, filepath.Join(base, "a")}; !slices.Equal(created, want) {
		t.Errorf("mkdirs created %v, want %v (deepest first)", created, want)
	}
	if again, err := mkdirs(dir); err != nil || again != nil {
		t.Errorf("mkdirs of an existing directory: %v, %v", again, err)
	}
	removeDirs(created)
	if entries, err := os.ReadDir(base); err != nil || len(entries) != 0 {
		t.Errorf("after removeDirs, %s holds %v (%v)", base, entries, err)
	}
}
