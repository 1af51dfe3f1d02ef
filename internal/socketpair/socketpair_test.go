//go:build linux

package socketpair

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// helperEnv makes the test binary the child process of the tests below
// (TestHelperProcess).
const helperEnv = "SOCKETPAIR_HELPER"

// TestHelperProcess is not a real test: it is the child process started by
// the tests below, in the mode its arguments name (runtimetest.HelperMain):
// it answers one line from the runtime over the inherited socket
// ("inherit", the descriptor NRI_PLUGIN_SOCKET names) or one it dials
// ("dial").
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{
		"inherit": func([]string) error {
			fd, err := strconv.Atoi(os.Getenv(EnvPluginSocket))
			if err != nil {
				return err
			}
			conn, err := FileConn(fd)
			if err != nil {
				return err
			}
			return echo(conn)
		},
		"dial": func([]string) error {
			conn, err := net.Dial("unix", os.Getenv("SOCKETPAIR_HELPER_ADDR"))
			if err != nil {
				return err
			}
			return echo(conn)
		},
	}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("helper process only")
	}
}

// echo answers one line read from conn, and closes it.
func echo(conn net.Conn) error {
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	_, err = io.WriteString(conn, "echo "+os.Getenv(EnvPluginName)+" "+strconv.Itoa(os.Getpid())+": "+line)
	return err
}

func helperCmd(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], runtimetest.HelperArgs(mode)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1", EnvPluginName+"=helper", EnvPluginIdx+"=10")
	// Its report of a failure ("EXIT ...") goes with the test's output.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

func newPair(t *testing.T) (*Pair, net.Conn) {
	t.Helper()
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := p.LocalConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func TestPairRoundTrip(t *testing.T) {
	p, local := newPair(t)
	if _, ok := local.(*net.UnixConn); !ok {
		t.Fatalf("LocalConn returned %T, want *net.UnixConn", local)
	}
	if _, err := p.LocalConn(); err == nil {
		t.Fatal("second LocalConn succeeded")
	}
	// FileConn takes ownership of the descriptor it is given, so give it
	// a duplicate, as a child would inherit one.
	fd, err := syscall.Dup(int(p.PeerFile().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	peer, err := FileConn(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := p.ClosePeer(); err != nil {
		t.Fatal(err)
	}

	local.SetDeadline(time.Now().Add(10 * time.Second))
	peer.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := local.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	if _, err := peer.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(local, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("local read %q, %v", buf, err)
	}
	peer.Close()
	if n, err := local.Read(buf); err != io.EOF {
		t.Fatalf("read after peer close: %d, %v; want EOF", n, err)
	}
	// Socket pair credentials are those of the creating process.
	pid, err := PeerPID(local)
	if err != nil {
		t.Fatal(err)
	}
	if pid != os.Getpid() {
		t.Fatalf("PeerPID on socket pair = %d, want creator %d", pid, os.Getpid())
	}
	cred, err := PeerCred(local)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Cred{PID: os.Getpid(), UID: os.Geteuid(), GID: os.Getegid()}); cred != want {
		t.Fatalf("PeerCred on socket pair = %+v, want %+v", cred, want)
	}
}

func TestCloexec(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, f := range []*os.File{p.local, p.peer} {
		flags, err := fcntlGetfd(int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		if flags&1 == 0 { // FD_CLOEXEC
			t.Fatalf("%s: FD_CLOEXEC not set", f.Name())
		}
	}
}

func TestCloseIdempotent(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ClosePeer(); err != nil {
		t.Fatal(err)
	}
	if p.PeerFile() != nil {
		t.Fatal("PeerFile not nil after ClosePeer")
	}
	if err := p.ClosePeer(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LocalConn(); err == nil {
		t.Fatal("LocalConn after Close succeeded")
	}
}

func TestFileConnNotSocket(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_, err = FileConn(int(r.Fd()))
	if err == nil {
		t.Fatal("FileConn on a pipe succeeded")
	}
	if !strings.Contains(err.Error(), "not a socket") || !strings.Contains(err.Error(), "pipe") {
		t.Fatalf("unclear error: %v", err)
	}
	// The pipe must still be usable: FileConn left it alone.
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := FileConn(-1); err == nil {
		t.Fatal("FileConn(-1) succeeded")
	}
	if _, err := FileConn(1 << 20); err == nil {
		t.Fatal("FileConn on a closed fd succeeded")
	}
}

func TestPeerPIDNotUnix(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := PeerPID(a); err == nil {
		t.Fatal("PeerPID on net.Pipe succeeded")
	}
}

func TestChildInheritsSocket(t *testing.T) {
	p, local := newPair(t)
	cmd := helperCmd(t, "inherit")
	cmd.ExtraFiles = []*os.File{p.PeerFile()}
	cmd.Env = append(cmd.Env, EnvPluginSocket+"=3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.ClosePeer(); err != nil {
		t.Fatal(err)
	}
	local.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(local, "hello child\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(local) // EOF once the child exits: we closed our peer copy
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper failed: %v", err)
	}
	want := "echo helper " + strconv.Itoa(cmd.Process.Pid) + ": hello child\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPeerPIDChild(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := helperCmd(t, "dial")
	cmd.Env = append(cmd.Env, "SOCKETPAIR_HELPER_ADDR="+sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	l.(*net.UnixListener).SetDeadline(time.Now().Add(30 * time.Second))
	conn, err := l.Accept()
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	defer conn.Close()
	pid, err := PeerPID(conn)
	if err != nil {
		t.Fatal(err)
	}
	if pid != cmd.Process.Pid {
		t.Fatalf("PeerPID = %d, want child %d", pid, cmd.Process.Pid)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(conn, "x\n")
	io.ReadAll(conn)
}
