package identity

import (
	"strings"
	"testing"
)

// inPod returns an external identity of uid in container name of pod
// namespace/podName.
func inPod(uid int, namespace, podName, name string) *Identity {
	return &Identity{Kind: External, Process: &Process{PID: 10, UID: uid, Exe: "/plugin", Digest: "sha256:aa"},
		Container: &Container{ID: "c1", Name: name, Pod: Pod{Namespace: namespace, Name: podName, Labels: map[string]string{"app": "x"}}}}
}

// noPod returns an external identity in the container id, whose pod the
// runtime did not list.
func noPod(id string) *Identity {
	return &Identity{Kind: External, Process: &Process{UID: 0}, Container: &Container{ID: id, Name: "plugin", Pod: Pod{ID: "p"}}}
}

// onHost returns an external identity of uid running digest in no
// container.
func onHost(uid int, digest string) *Identity {
	return &Identity{Kind: External, Process: &Process{PID: 11, UID: uid, Exe: "/usr/bin/p", Digest: digest, Cgroup: "/user.slice"}}
}

func TestSame(t *testing.T) {
	real := inPod(0, "kube-system", "nri-plugin-logger-x7k2p", "plugin")
	restarted := inPod(0, "kube-system", "nri-plugin-logger-x7k2p", "plugin")
	restarted.Process.PID, restarted.Container.ID, restarted.Process.Digest = 99, "c2", "sha256:bb"
	unlocated := inPod(0, "kube-system", "nri-plugin-logger-x7k2p", "plugin")
	unlocated.Container, unlocated.Unlocated = nil, "listing failed"
	noDigest := onHost(0, "")
	for _, tc := range []struct {
		name string
		a, b *Identity
		want bool
	}{
		{"the same container, restarted", real, restarted, true},
		{"another pod", real, inPod(0, "kube-system", "nri-plugin-logger-abcde", "plugin"), false},
		{"another namespace", real, inPod(0, "default", "nri-plugin-logger-x7k2p", "plugin"), false},
		{"another container", real, inPod(0, "kube-system", "nri-plugin-logger-x7k2p", "sidecar"), false},
		{"another uid", real, inPod(1000, "kube-system", "nri-plugin-logger-x7k2p", "plugin"), false},
		{"a host process", real, onHost(0, "sha256:aa"), false},
		{"not located", real, unlocated, false},
		{"pods not listed, other containers", noPod("c1"), noPod("c2"), false},
		{"pods not listed, the same container", noPod("c1"), noPod("c1"), true},
		{"the same host executable", onHost(0, "sha256:aa"), onHost(0, "sha256:aa"), true},
		{"another host executable", onHost(0, "sha256:aa"), onHost(0, "sha256:bb"), false},
		{"an executable not hashed", noDigest, noDigest, false},
		{"the same pre-installed file", Launched(PreInstalled, "/opt/nri/plugins/10-x"), Launched(PreInstalled, "/opt/nri/plugins/10-x"), true},
		{"another kind", Launched(PreInstalled, "/x"), Launched(WASM, "/x"), false},
		{"nil", nil, real, false},
		{"unknown", &Identity{}, &Identity{}, false},
	} {
		if got := tc.a.Same(tc.b); got != tc.want {
			t.Errorf("%s: Same = %v, want %v\n%s\n%s", tc.name, got, tc.want, tc.a, tc.b)
		}
		if got := tc.b.Same(tc.a); got != tc.want {
			t.Errorf("%s (reversed): Same = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	pod := inPod(0, "kube-system", "nri-plugin-logger-x7k2p", "plugin")
	pod.Container.ID = "3f2a1b2c3d4e5f60718293a4b5c6d7e8f"
	pod.Container.Image = "localhost/nrikit/logger:dev"
	hostile := onHost(0, "")
	hostile.Process.Exe = "/tmp/my plugin\n"
	hostile.Process.Unread = []string{"executable: larger than 256 MiB"}
	hostile.Process.Pinning = PinNone
	many := inPod(0, "ns", "p", "c")
	many.Container.Pod.Labels = map[string]string{}
	for _, k := range strings.Split("a b c d e f g h i j", " ") {
		many.Container.Pod.Labels[k] = "v"
	}
	for _, tc := range []struct {
		id   *Identity
		want string
	}{
		{nil, "unknown"},
		{Launched(Builtin, ""), "builtin"},
		{Launched(PreInstalled, "/opt/nri/plugins/10-logger"), "pre-installed /opt/nri/plugins/10-logger"},
		{pod, "external pid=10 pinning=none uid=0 gid=0 exe=/plugin digest=sha256:aa pod=kube-system/nri-plugin-logger-x7k2p labels=app=x container=plugin id=3f2a1b2c3d4e image=localhost/nrikit/logger:dev"},
		{hostile, `external pid=11 pinning=none uid=0 gid=0 exe="/tmp/my plugin\n" container=none cgroup=/user.slice unread="executable: larger than 256 MiB"`},
		{&Identity{Kind: External, Process: &Process{PID: 3, Pinning: PinPeerPIDFD}, Unlocated: "listing the runtime's containers: timeout"},
			"external pid=3 uid=0 gid=0 container=unknown (listing the runtime's containers: timeout)"},
		{many, "external pid=10 pinning=none uid=0 gid=0 exe=/plugin digest=sha256:aa pod=ns/p labels=\"a=v,b=v,c=v,d=v,e=v,f=v,g=v,h=v,+2 more\" container=c id=c1"},
	} {
		if got := tc.id.String(); got != tc.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, tc.want)
		}
	}
	long := onHost(0, "")
	long.Process.Exe = "/" + strings.Repeat("x", 1000)
	if s := long.String(); len(s) > 400 || !strings.Contains(s, "(1001 bytes)") {
		t.Errorf("a long executable path is not clipped: %d bytes: %s", len(s), s)
	}
}
