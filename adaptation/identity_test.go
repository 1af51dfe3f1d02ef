package adaptation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/identity"
)

// unixPair returns the two ends of a unix socket pair made by this
// process: a connection whose peer credentials are this process's, as
// ServeConn sees a plugin of the same identity on every pair.
func unixPair(t testing.TB) (rtEnd, plEnd net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// pluginBinary is a copy of the test binary, a plugin executable of its
// own: with tail appended (an ELF file runs the same with bytes after
// it), another executable digest.
type pluginBinary struct {
	path, digest string
}

// copyTestBinary copies the test binary into dir as name, with tail
// appended.
func copyTestBinary(t testing.TB, dir, name, tail string) pluginBinary {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, name)
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(dst, h), io.MultiReader(src, strings.NewReader(tail))); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return pluginBinary{path: path, digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}
}

// realAndImpostor returns the executable of the real plugin of a test and
// the impostor's, another program.
func realAndImpostor(t testing.TB) (real, impostor pluginBinary) {
	dir := t.TempDir()
	return copyTestBinary(t, dir, "real-plugin", ""), copyTestBinary(t, dir, "impostor-plugin", "\x00impostor")
}

// registered waits until the plugin full is synchronized.
func (rt *testRuntime) registered(t testing.TB, full string) {
	t.Helper()
	rt.logs.wait(t, full+" synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" && r.attrs["plugin"] == full })
}

// refused waits until a registration as full was refused with an error
// holding every one of wants, and returns the error.
func (rt *testRuntime) refused(t testing.TB, full string, wants ...string) string {
	t.Helper()
	r := rt.logs.wait(t, "the refusal of "+full, func(r logRecord) bool {
		if r.msg != "plugin registration failed" || !strings.Contains(r.attrs["error"], `"`+full+`"`) {
			return false
		}
		for _, w := range wants {
			if !strings.Contains(r.attrs["error"], w) {
				return false
			}
		}
		return true
	})
	return r.attrs["error"]
}

// TestIdentityHandover: a connection under a connected external plugin's
// name replaces it only with the same identity. Another program is refused
// with both identities (before issue 37 it replaced the real plugin: the
// real one got Shutdown and the impostor answered in its place); the real
// plugin keeps answering, and told the refusal, the impostor's stub
// fails to start.
func TestIdentityHandover(t *testing.T) {
	real, impostor := realAndImpostor(t)
	rt := newTestRuntime(t, nil)
	rt.start(t)
	plugin := func(label string, bin pluginBinary) {
		startExternalFrom(t, rt.logs, label, bin.path, helperArgs("stub", "-socket", rt.socket, "-name", "h", "-idx", "10",
			"-env", "V="+label, "-events", "CreateContainer"))
	}
	plugin("real", real)
	rt.registered(t, "10-h")
	createWorks(t, rt, 0, "V=real")

	plugin("impostor", impostor)
	msg := rt.refused(t, "10-h", "may not replace it", "digest="+real.digest, "digest="+impostor.digest)
	rt.logs.wait(t, "the impostor told", output("impostor", "REGISTER error"))
	if !strings.Contains(strings.Join(rt.logs.lines("impostor", "REGISTER error"), ""), "replaced only by the same identity") {
		t.Errorf("the impostor was not told why: %q", rt.logs.lines("impostor", "REGISTER"))
	}
	createWorks(t, rt, 1, "V=real")
	if p, ok := rt.plugin("10-h"); !ok || p.Identity.Process.Digest != real.digest {
		t.Errorf("10-h after the impostor: %+v", p.Identity)
	}
	t.Logf("refused: %s", msg)

	// The real program again (a restart) replaces it.
	plugin("restarted", real)
	rt.logs.waitN(t, 2, "the restart synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-h" })
	rt.logs.wait(t, "the first one shut down", output("real", "SHUTDOWN"))
	createWorks(t, rt, 2, "V=restarted")
}

// TestIdentityGrant: a grant bound to the real plugin's identity (its
// executable and user) is refused to another program registering under
// its name (before issue 37, any process that reached the socket got the
// grant of the name it registered with); the real plugin gets it. The
// registration is logged with the identity.
func TestIdentityGrant(t *testing.T) {
	real, impostor := realAndImpostor(t)
	pol := parsePolicy(t, fmt.Sprintf(`grants:
  - plugins: [h]
    identity: {uids: [%d], executables: [%q]}
    adjust: {env: [V]}
`, os.Getuid(), real.digest))
	rt := newTestRuntime(t, nil, WithPolicy(pol))
	rt.start(t)
	args := func(label string) []string {
		return helperArgs("stub", "-socket", rt.socket, "-name", "h", "-idx", "10", "-env", "V="+label, "-events", "CreateContainer")
	}
	startExternalFrom(t, rt.logs, "impostor", impostor.path, args("impostor"))
	msg := rt.refused(t, "10-h", "the policy binds this name to another identity", "policy.yaml:2: grants[0] takes identity in_no_container AND uids=", "digest="+impostor.digest)
	if _, ok := rt.plugin("10-h"); ok {
		t.Fatal("the impostor is registered")
	}
	t.Logf("refused: %s", msg)

	startExternalFrom(t, rt.logs, "real", real.path, args("real"))
	rt.registered(t, "10-h")
	createWorks(t, rt, 0, "V=real")
	reg := rt.logs.wait(t, "registration log", func(r logRecord) bool {
		return r.msg == "plugin registering" && r.attrs["plugin"] == "10-h" && strings.Contains(r.attrs["identity"], real.digest)
	})
	if id := reg.attrs["identity"]; !strings.HasPrefix(id, "external pid=") || !strings.Contains(id, "exe="+real.path) || !strings.Contains(id, "container=none") {
		t.Errorf("registration logged identity %q", id)
	}
}

// TestIdentityRequired: a required plugin counts only with the identity
// of its entry: another program registering under its name is refused
// and pods are still refused (before issue 37 an impostor satisfied the
// requirement); the real one lets them be created. A reload that binds
// the name to another identity leaves the connected plugin counting for
// nothing, with the reason in the refusal.
func TestIdentityRequired(t *testing.T) {
	real, impostor := realAndImpostor(t)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	required := func(digest string) string {
		return fmt.Sprintf("required:\n  - plugin: gpu-policy\n    identity: {executables: [%q]}\n", digest)
	}
	writePolicy(t, policyFile, required(real.digest))
	rt := newTestRuntime(t, nil, WithPolicyFile(policyFile))
	rt.start(t)
	args := helperArgs("stub", "-socket", rt.socket, "-name", "gpu-policy", "-idx", "50", "-events", "RunPodSandbox")
	runPod := func(i int) error {
		return rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: testPod(i)})
	}

	startExternalFrom(t, rt.logs, "impostor", impostor.path, args)
	rt.refused(t, "50-gpu-policy", `required[0] gpu-policy takes identity in_no_container AND executables=[`+real.digest)
	var rerr *RequiredPluginError
	if err := runPod(0); !errors.As(err, &rerr) || rerr.Plugin != "gpu-policy" {
		t.Fatalf("RunPodSandbox with the impostor refused: %v", err)
	}

	startExternalFrom(t, rt.logs, "real", real.path, args)
	rt.registered(t, "50-gpu-policy")
	must(t, runPod(1))

	// Reloaded, the entry takes another program: the connected one no
	// longer counts.
	writePolicy(t, policyFile, required(impostor.digest))
	must(t, rt.a.ReloadPolicy())
	err := runPod(2)
	if !errors.As(err, &rerr) || !strings.Contains(err.Error(), "binds this name to another identity") {
		t.Fatalf("RunPodSandbox after the reload: %v", err)
	}
	t.Logf("after the reload: %v", err)
}

// fakeProc makes a procfs at root for the process pid: its cgroup, and an
// exe that links to the executable exe.
func fakeProc(t testing.TB, root string, pid int, cgroup, exe string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
}

// withProcRoot makes the Adaptation read the processes of external plugins
// from a procfs at root.
func withProcRoot(root string) Option {
	return func(c *config) error { c.procRoot = root; return nil }
}

// TestIdentityOfContainer: an external plugin's identity is the container
// its cgroup is in, from the runtime's list (cgroups of the systemd and
// cgroupfs layouts, here read through a procfs standing for the host's);
// a grant bound to the plugin's DaemonSet (namespace, pod labels,
// container name) applies to it, and the same program in another pod,
// registering under its name, is refused with both identities.
func TestIdentityOfContainer(t *testing.T) {
	real, _ := realAndImpostor(t)
	procRoot, gate := t.TempDir(), t.TempDir()
	pol := parsePolicy(t, `grants:
  - plugins: [h]
    identity:
      namespaces: [kube-system]
      podLabelSelector: app.kubernetes.io/name=nri-plugin-h
      containerNames: [plugin]
    adjust: {env: [V]}
`)
	rt := newTestRuntime(t, nil, WithPolicy(pol), withProcRoot(procRoot))
	rt.store.AddPod(&api.PodSandbox{Id: "ds", Uid: "u1", Namespace: "kube-system", Name: "nri-plugin-h-x7k2p",
		Labels: map[string]string{"app.kubernetes.io/name": "nri-plugin-h"}})
	rt.store.AddCtr(&api.Container{Id: "abc", PodSandboxId: "ds", Name: "plugin", Image: &api.Image{Name: "localhost/nrikit/h:dev"},
		Linux: &api.LinuxContainer{CgroupsPath: "kubepods-besteffort-podu1.slice:cri-containerd:abc"}})
	rt.store.AddPod(&api.PodSandbox{Id: "other", Namespace: "default", Name: "impostor", Labels: map[string]string{"app.kubernetes.io/name": "nri-plugin-h"}})
	rt.store.AddCtr(&api.Container{Id: "def", PodSandboxId: "other", Name: "plugin", Linux: &api.LinuxContainer{CgroupsPath: "/kubepods/besteffort/pod2/def"}})
	rt.start(t)

	start := func(label, cgroup string) {
		t.Helper()
		wait := filepath.Join(gate, label)
		e := startExternalFrom(t, rt.logs, label, real.path, helperArgs("stub", "-socket", rt.socket, "-name", "h", "-idx", "10",
			"-env", "V="+label, "-events", "CreateContainer", "-wait", wait))
		fakeProc(t, procRoot, e.proc.Pid(), cgroup, real.path)
		if err := os.WriteFile(wait, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start("daemonset", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice/cri-containerd-abc.scope\n")
	rt.registered(t, "10-h")
	createWorks(t, rt, 0, "V=daemonset")
	p, _ := rt.plugin("10-h")
	if c := p.Identity.Container; c == nil || c.ID != "abc" || c.Pod.Namespace != "kube-system" || c.Image != "localhost/nrikit/h:dev" {
		t.Fatalf("the plugin's identity: %s", p.Identity)
	}

	// The same program, in another namespace's pod (v1 cgroupfs layout).
	start("impostor", "8:pids:/kubepods/besteffort/pod2/def\n4:memory:/\n")
	msg := rt.refused(t, "10-h", "pod=kube-system/nri-plugin-h-x7k2p", "pod=default/impostor", "may not replace it")
	createWorks(t, rt, 1, "V=daemonset")
	t.Logf("refused: %s", msg)

	// A process in no container the runtime lists: the policy's binding.
	rt.a.mu.Lock()
	q := rt.a.findLocked("10-h")
	rt.a.mu.Unlock()
	q.disconnect("test")
	start("host", "0::/user.slice/user-1000.slice/session-2.scope\n")
	rt.refused(t, "10-h", "the policy binds this name to another identity", "container=none cgroup=/user.slice/user-1000.slice/session-2.scope")
}

// TestIdentityUnknownPeer: a connection whose credentials are unknown
// (ServeConn of a connection that is not a unix socket) has an identity
// that says so, and meets only identity: any.
func TestIdentityUnknownPeer(t *testing.T) {
	id := (&Adaptation{}).identify("10-x", nil)
	if id.Kind != identity.External || id.Process != nil || !strings.Contains(id.String(), "container=unknown (the connection's peer credentials are unknown)") {
		t.Errorf("identity of an unknown peer: %s", id)
	}
	pol := parsePolicy(t, "grants:\n  - plugins: [x]\n    identity: any\n  - plugins: [y]\n    identity: {uids: [0]}\n")
	if _, err := pol.GrantForIdentity("10", "x", id); err != nil {
		t.Errorf("identity: any: %v", err)
	}
	if _, err := pol.GrantForIdentity("10", "y", id); err == nil {
		t.Error("an unknown peer meets uids: [0]")
	}
}

// BenchmarkIdentify measures what deriving an external plugin's identity
// costs its registration (once per connection): the peer captured from a
// unix socket (SO_PEERCRED, SO_PEERPIDFD), /proc read through the pidfd
// check, the executable's digest (the test binary's, from the cache after
// the first), and the runtime's list of 110 pods and containers searched
// for the process's cgroup.
func BenchmarkIdentify(b *testing.B) {
	rt := newTestRuntime(b, nil)
	for i := range 110 {
		rt.store.AddPod(&api.PodSandbox{Id: fmt.Sprintf("pod%d", i), Namespace: "default", Name: fmt.Sprintf("pod-%d", i)})
		rt.store.AddCtr(&api.Container{Id: fmt.Sprintf("ctr%d", i), PodSandboxId: fmt.Sprintf("pod%d", i), Name: "c",
			Linux: &api.LinuxContainer{CgroupsPath: fmt.Sprintf("kubepods-besteffort-pod%d.slice:cri-containerd:ctr%d", i, i)}})
	}
	for b.Loop() {
		rtEnd, plEnd := unixPair(b)
		peer, err := identity.Capture(rtEnd)
		if err != nil {
			b.Fatal(err)
		}
		if id := rt.a.identify("10-x", peer); id.Process == nil || id.Process.Digest == "" || id.Unlocated != "" {
			b.Fatalf("identity %s", id)
		}
		peer.Close()
		rtEnd.Close()
		plEnd.Close()
	}
}
