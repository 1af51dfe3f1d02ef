package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process (TestMain): it
// connects to the unix socket the variable names, writes one byte, and
// waits for its standard input to close.
const helperEnv = "IDENTITY_TEST_CONNECT"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		conn, err := net.Dial("unix", path)
		if err != nil {
			os.Exit(2)
		}
		conn.Write([]byte{1})
		var b [1]byte
		os.Stdin.Read(b[:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// listen returns a listener on a socket in a temporary directory.
func listen(t *testing.T) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// pair returns an accepted connection and the client end that dialed it,
// from this process.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	l := listen(t)
	client, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// fileDigest returns "sha256:HEX" of the file at path.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// peerPIDFDSupported reports whether the kernel has SO_PEERPIDFD.
func peerPIDFDSupported(t *testing.T) bool {
	t.Helper()
	server, _ := pair(t)
	rc, err := server.(*net.UnixConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var gerr error
	rc.Control(func(fd uintptr) {
		var pidfd int
		if pidfd, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, soPeerPIDFD); gerr == nil {
			syscall.Close(pidfd)
		}
	})
	return gerr == nil
}

// TestCaptureAndInspect: the peer of a real connection is this process,
// with its credentials, executable and cgroup as the kernel gives them.
func TestCaptureAndInspect(t *testing.T) {
	server, _ := pair(t)
	p, err := Capture(server)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.PID != os.Getpid() || p.UID != os.Getuid() || p.GID != os.Getgid() {
		t.Errorf("Capture: pid %d uid %d gid %d, want this process's %d %d %d", p.PID, p.UID, p.GID, os.Getpid(), os.Getuid(), os.Getgid())
	}
	want := PinAccept
	if peerPIDFDSupported(t) {
		want = PinPeerPIDFD
	}
	proc := p.Inspect(context.Background(), InspectOptions{Digests: NewDigestCache(4)})
	if proc.Pinning != want {
		t.Errorf("pinning %s, want %s", proc.Pinning, want)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if proc.Exe != exe {
		t.Errorf("Exe %q, want %q", proc.Exe, exe)
	}
	if d := fileDigest(t, exe); proc.Digest != d {
		t.Errorf("Digest %q, want %q", proc.Digest, d)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if cg, _ := ProcCgroup(string(self)); proc.Cgroup != cg || cg == "" {
		t.Errorf("Cgroup %q, want %q", proc.Cgroup, cg)
	}
	if len(proc.Unread) > 0 {
		t.Errorf("Unread: %q", proc.Unread)
	}
	id := &Identity{Kind: External, Process: proc}
	s := id.String()
	for _, w := range []string{"external pid=" + strconv.Itoa(os.Getpid()), "uid=" + strconv.Itoa(os.Getuid()), "digest=" + proc.Digest, "container=none", "cgroup=" + proc.Cgroup} {
		if !strings.Contains(s, w) {
			t.Errorf("String() = %q, lacks %q", s, w)
		}
	}
	if want == PinPeerPIDFD && strings.Contains(s, "pinning=") {
		t.Errorf("String() = %q names the pinning, which is the strong one", s)
	}
	for range 2 { // idempotent
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if after := p.Inspect(context.Background(), InspectOptions{}); len(after.Unread) == 0 || after.Exe != "" {
		t.Errorf("Inspect after Close read the process: %+v", after)
	}
}

// TestCaptureWithoutPeerPIDFD: on a kernel without SO_PEERPIDFD the pidfd
// is opened at accept, and the identity says so.
func TestCaptureWithoutPeerPIDFD(t *testing.T) {
	server, _ := pair(t)
	p, err := capture(server, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	proc := p.Inspect(context.Background(), InspectOptions{})
	if proc.Pinning != PinAccept || proc.Digest == "" {
		t.Errorf("pinning %s digest %q, want %s and a digest", proc.Pinning, proc.Digest, PinAccept)
	}
	if s := (&Identity{Kind: External, Process: proc}).String(); !strings.Contains(s, "pinning=pidfd-at-accept") {
		t.Errorf("String() = %q, does not say how the PID was pinned", s)
	}
}

// helper starts the test binary as a process that connects to l and
// returns it with the accepted connection; closing stdin ends it.
func helper(t *testing.T, l *net.UnixListener) (*exec.Cmd, net.Conn, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+l.Addr().String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l.SetDeadline(time.Now().Add(time.Minute))
	conn, err := l.Accept()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	var b [1]byte
	conn.Read(b[:])
	t.Cleanup(func() { conn.Close() })
	stop := func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
	return cmd, conn, stop
}

// TestReusedPIDCannotStandIn: the process that connected has exited (and
// been reaped) before the runtime reads /proc; a /proc/PID that exists
// again (here a fake procfs standing for a process that took the PID) is
// not read as the peer's. The same with SO_PEERPIDFD taken after the exit:
// the connection's process is known gone.
func TestReusedPIDCannotStandIn(t *testing.T) {
	l := listen(t)
	cmd, conn, stop := helper(t, l)
	p, err := Capture(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.PID != cmd.Process.Pid {
		t.Fatalf("peer pid %d, want the helper's %d", p.PID, cmd.Process.Pid)
	}
	stop() // exited and reaped: its PID is free
	root := fakeProc(t, p.PID, "0::/kube/impostor\n", "impostor binary")
	proc := p.Inspect(context.Background(), InspectOptions{ProcRoot: root})
	if proc.Exe != "" || proc.Digest != "" || proc.Cgroup != "" || !strings.Contains(strings.Join(proc.Unread, ";"), "exited") {
		t.Errorf("Inspect of an exited peer read %+v", proc)
	}

	// Captured only after the exit.
	cmd, conn, stop = helper(t, l)
	stop()
	p2, err := Capture(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	root = fakeProc(t, cmd.Process.Pid, "0::/kube/impostor\n", "impostor binary")
	proc = p2.Inspect(context.Background(), InspectOptions{ProcRoot: root})
	if peerPIDFDSupported(t) && (proc.Exe != "" || proc.Cgroup != "") {
		t.Errorf("Inspect of a peer captured after it exited read %+v", proc)
	}
}

// fakeProc makes a procfs with pid's cgroup and exe (a link to a file
// holding content).
func fakeProc(t *testing.T, pid int, cgroup, content string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(root, "bin")
	if err := os.WriteFile(exe, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestInspectFakeProc reads a live peer through a procfs whose files
// stand for the layouts and bounds under test.
func TestInspectFakeProc(t *testing.T) {
	server, _ := pair(t)
	p, err := Capture(server)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	root := fakeProc(t, p.PID, "8:pids:/kubepods/besteffort/pod1/abc\n4:memory:/other\n0::/\n", "plugin binary")
	proc := p.Inspect(context.Background(), InspectOptions{ProcRoot: root})
	exe := filepath.Join(root, "bin")
	if proc.Cgroup != "/kubepods/besteffort/pod1/abc" || proc.Exe != exe || proc.Digest != fileDigest(t, exe) {
		t.Errorf("Inspect: %+v", proc)
	}

	// Bounds: an executable above the size limit is not hashed, nor one
	// that is not a regular file; the identity says why.
	proc = p.Inspect(context.Background(), InspectOptions{ProcRoot: root, MaxExecutableSize: 4})
	if proc.Digest != "" || !strings.Contains(strings.Join(proc.Unread, ";"), "larger than 4") {
		t.Errorf("Inspect with a 4-byte limit: %+v", proc)
	}
	os.Remove(exe)
	os.Mkdir(exe, 0o755)
	proc = p.Inspect(context.Background(), InspectOptions{ProcRoot: root})
	if proc.Digest != "" || !strings.Contains(strings.Join(proc.Unread, ";"), "not a regular file") {
		t.Errorf("Inspect of a directory as executable: %+v", proc)
	}
	// A cgroup file beyond its bound, or malformed.
	os.WriteFile(filepath.Join(root, strconv.Itoa(p.PID), "cgroup"), []byte(strings.Repeat("x", maxCgroupFile+1)), 0o644)
	if proc = p.Inspect(context.Background(), InspectOptions{ProcRoot: root}); proc.Cgroup != "" || !strings.Contains(strings.Join(proc.Unread, ";"), "cgroup: larger") {
		t.Errorf("Inspect of a large cgroup file: %+v", proc)
	}
	// A process not visible in the runtime's PID namespace.
	hidden := &Peer{PID: 0, UID: 5, pidfd: -1}
	if proc := hidden.Inspect(context.Background(), InspectOptions{}); proc.UID != 5 || len(proc.Unread) != 1 {
		t.Errorf("Inspect of PID 0: %+v", proc)
	}
}

// TestHashBounds: the deadline and the context stop a hash, and a file
// that grows beyond its size is refused.
func TestHashBounds(t *testing.T) {
	data := strings.Repeat("x", 3*hashChunk)
	if _, err := hashFile(context.Background(), strings.NewReader(data), int64(len(data)), &InspectOptions{HashTimeout: time.Nanosecond}); err == nil || !strings.Contains(err.Error(), "not hashed within") {
		t.Errorf("hash past its deadline: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := hashFile(ctx, strings.NewReader(data), int64(len(data)), &InspectOptions{}); err == nil {
		t.Error("hash with a cancelled context succeeded")
	}
	if _, err := hashFile(context.Background(), strings.NewReader(data), 10, &InspectOptions{}); err == nil || !strings.Contains(err.Error(), "grew") {
		t.Errorf("hash of a file longer than its size: %v", err)
	}
	d, err := hashFile(context.Background(), strings.NewReader("abc"), 3, &InspectOptions{})
	if err != nil || d != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("hash of abc: %q %v", d, err)
	}
}

// TestDigestCache: a file hashed once is not hashed again while it is
// unchanged; the cache keeps at most its size.
func TestDigestCache(t *testing.T) {
	c := NewDigestCache(2)
	computed := 0
	compute := func() (string, error) { computed++; return "sha256:" + strconv.Itoa(computed), nil }
	k1, k2, k3 := fileKey{ino: 1}, fileKey{ino: 2}, fileKey{ino: 3}
	for _, k := range []fileKey{k1, k1, k2, k1, k3, k1} {
		c.digest(k, compute)
	}
	// k1, k2 computed; k3 evicts k1, which is computed again.
	if computed != 4 || len(c.m) != 2 {
		t.Errorf("computed %d times, %d cached; want 4 and 2", computed, len(c.m))
	}
	var nilCache *DigestCache
	if d, _ := nilCache.digest(k1, compute); d != "sha256:5" {
		t.Errorf("the nil cache: %q", d)
	}
}
