package identity

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Kind is how a plugin came to the runtime, which decides what its
// identity rests on.
type Kind uint8

const (
	// Unknown is the zero Kind: nothing is known of the plugin.
	Unknown Kind = iota
	// Builtin is a plugin compiled into the runtime.
	Builtin
	// PreInstalled is a process the runtime launched from its plugin
	// directory.
	PreInstalled
	// WASM is a WebAssembly module of the runtime's plugin directory.
	WASM
	// External is a process that connected to the runtime's socket.
	External
)

// String returns the kind's name, as the runtime library logs it.
func (k Kind) String() string {
	switch k {
	case Builtin:
		return "builtin"
	case PreInstalled:
		return "pre-installed"
	case WASM:
		return "wasm"
	case External:
		return "external"
	}
	return "unknown"
}

// Launched reports whether the runtime started the plugin itself
// (builtin, pre-installed, WASM): such a plugin is who its file or its
// registration in the runtime says.
func (k Kind) Launched() bool { return k == Builtin || k == PreInstalled || k == WASM }

// Identity is who a plugin is, as the runtime can prove it. The zero
// value (and the nil *Identity) is a plugin of unknown identity, which
// meets no requirement. An Identity is immutable once made.
type Identity struct {
	// Kind is how the plugin came to the runtime.
	Kind Kind
	// File is a pre-installed or WASM plugin's file in the plugin
	// directory.
	File string
	// Process is an external plugin's process; nil for other kinds.
	Process *Process
	// Container is the container an external plugin's process runs in,
	// from the runtime's own list; nil if it runs in none the runtime
	// lists, or if that could not be told (then Unlocated says why).
	Container *Container
	// Unlocated says why it could not be told whether, and where, an
	// external plugin's process runs in a container; empty if it could.
	Unlocated string
}

// Process is an external plugin's process: what the kernel reports of the
// socket's peer and what /proc shows of it.
type Process struct {
	// PID, UID and GID are the peer's, as SO_PEERCRED reports them in
	// the runtime's namespaces (PID 0: the process is not visible in the
	// runtime's PID namespace).
	PID, UID, GID int
	// Pinning is how the runtime made sure that what it read under
	// /proc/PID was the peer's.
	Pinning Pinning
	// Exe is the path of the process's executable, as the process sees
	// it (in its own mount namespace).
	Exe string
	// Digest is the SHA-256 of the executable the process runs,
	// "sha256:" and 64 lower-case hexadecimal digits; empty if it was not
	// read (Unread says why).
	Digest string
	// Cgroup is the process's cgroup, as /proc/PID/cgroup names it from
	// the runtime's cgroup namespace (see ProcCgroup); empty if unread.
	Cgroup string
	// Unread says what of the process could not be read, and why
	// ("executable: larger than 256 MiB, not hashed").
	Unread []string
}

// Pinning is how the runtime tied the PID it read /proc of to the
// process that connected.
type Pinning uint8

const (
	// PinNone: no pidfd; a PID reused after the peer exited could stand
	// in for it (kernels before 5.3).
	PinNone Pinning = iota
	// PinPeerPIDFD: the kernel's pidfd of the process that connected
	// (SO_PEERPIDFD), checked alive after /proc/PID was opened.
	PinPeerPIDFD
	// PinAccept: a pidfd opened when the connection was accepted
	// (pidfd_open; kernels without SO_PEERPIDFD): a PID reused between
	// the peer's connect and the runtime's accept could stand in.
	PinAccept
)

// String names the pinning as the identity's String shows it.
func (p Pinning) String() string {
	switch p {
	case PinPeerPIDFD:
		return "peer-pidfd"
	case PinAccept:
		return "pidfd-at-accept"
	}
	return "none"
}

// Container is a container the runtime lists, as much of it as an
// identity needs.
type Container struct {
	// ID and Name are the container's.
	ID, Name string
	// Image is the container's image name, where the runtime gives it
	// (containerd does, CRI-O v1.36 does not).
	Image string
	// Pod is the container's pod.
	Pod Pod
}

// Pod is the pod of a container.
type Pod struct {
	// ID, UID, Namespace and Name are the pod's.
	ID, UID, Namespace, Name string
	// Labels are the pod's labels (those the runtime was given).
	Labels map[string]string
}

// Launched returns the identity of a plugin the runtime launched: a
// pre-installed or WASM plugin from file, or a builtin one (file empty).
func Launched(kind Kind, file string) *Identity {
	return &Identity{Kind: kind, File: file}
}

// Same reports whether id and o are the same plugin, for a connection
// that would replace another of the same name: launched plugins of the
// same kind and file; external ones of the same uid that both run in
// the same container (by pod namespace, pod name and container name: a
// restarted process or container of the same pod is the same plugin), or
// both in no container with the same executable digest. An identity that
// is not fully known (a process not located, an executable not hashed)
// is the same as none.
func (id *Identity) Same(o *Identity) bool {
	if id == nil || o == nil || id.Kind != o.Kind || id.Kind == Unknown {
		return false
	}
	if id.Kind.Launched() {
		return id.File == o.File
	}
	p, q := id.Process, o.Process
	if p == nil || q == nil || p.UID != q.UID || id.Unlocated != "" || o.Unlocated != "" {
		return false
	}
	switch c, d := id.Container, o.Container; {
	case c != nil && d != nil:
		if c.Pod.Name == "" || d.Pod.Name == "" { // a pod the runtime did not list: the container alone
			return c.ID != "" && c.ID == d.ID
		}
		return c.Pod.Namespace == d.Pod.Namespace && c.Pod.Name == d.Pod.Name && c.Name == d.Name
	case c == nil && d == nil:
		return p.Digest != "" && p.Digest == q.Digest
	}
	return false
}

// InContainer reports whether the plugin is known to run in a container
// the runtime lists.
func (id *Identity) InContainer() bool { return id != nil && id.Container != nil }

// maxLabelsShown bounds the labels String shows; the pod's creator
// chose them.
const maxLabelsShown = 8

// String describes the identity in one line, for logs and messages:
//
//	pre-installed /opt/nri/plugins/10-logger
//	external pid=4242 uid=0 gid=0 exe=/bin/logger digest=sha256:… pod=kube-system/nri-plugin-logger-x7k2p labels=app.kubernetes.io/name=nri-plugin-logger container=plugin id=3f2a1b2c3d4e image=localhost/nrikit/logger:dev
//	external pid=4242 uid=1000 gid=1000 exe=/home/me/plugin digest=sha256:… container=none cgroup=/user.slice/user-1000.slice/session-2.scope
//
// Values a peer or a pod's creator chose are quoted if they hold spaces,
// quotes or control characters, and clipped.
func (id *Identity) String() string {
	if id == nil || id.Kind == Unknown {
		return "unknown"
	}
	var b strings.Builder
	b.WriteString(id.Kind.String())
	if id.Kind.Launched() {
		if id.File != "" {
			b.WriteString(" " + value(id.File))
		}
		return b.String()
	}
	if p := id.Process; p != nil {
		b.WriteString(" pid=" + strconv.Itoa(p.PID))
		if p.Pinning != PinPeerPIDFD {
			b.WriteString(" pinning=" + p.Pinning.String())
		}
		b.WriteString(" uid=" + strconv.Itoa(p.UID) + " gid=" + strconv.Itoa(p.GID))
		if p.Exe != "" {
			b.WriteString(" exe=" + value(p.Exe))
		}
		if p.Digest != "" {
			b.WriteString(" digest=" + p.Digest)
		}
	}
	switch c := id.Container; {
	case c != nil:
		b.WriteString(" pod=" + value(c.Pod.Namespace+"/"+c.Pod.Name))
		if l := labelList(c.Pod.Labels); l != "" {
			b.WriteString(" labels=" + value(l))
		}
		b.WriteString(" container=" + value(c.Name))
		b.WriteString(" id=" + value(shortID(c.ID)))
		if c.Image != "" {
			b.WriteString(" image=" + value(c.Image))
		}
	case id.Unlocated != "":
		b.WriteString(" container=unknown (" + clip(id.Unlocated) + ")")
	default:
		b.WriteString(" container=none")
		if p := id.Process; p != nil && p.Cgroup != "" {
			b.WriteString(" cgroup=" + value(p.Cgroup))
		}
	}
	if p := id.Process; p != nil && len(p.Unread) > 0 {
		b.WriteString(" unread=" + value(strings.Join(p.Unread, "; ")))
	}
	return b.String()
}

// labelList renders labels as a selector would name them, sorted, at
// most maxLabelsShown of them.
func labelList(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, 0, min(len(keys), maxLabelsShown)+1)
	for i, k := range keys {
		if i == maxLabelsShown {
			parts = append(parts, "+"+strconv.Itoa(len(keys)-i)+" more")
			break
		}
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// shortID is a container ID as crictl shows it, 12 characters.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// clipLength is how much of a value String keeps.
const clipLength = 256

// clip shortens s to clipLength bytes, saying how long it was.
func clip(s string) string {
	if len(s) <= clipLength {
		return s
	}
	return strings.ToValidUTF8(s[:clipLength], "") + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

// value renders a value of the line: clipped, quoted if it is empty or
// holds a space, a quote, a backslash or a character that is not
// printable.
func value(s string) string {
	s = clip(s)
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '\\' || !strconv.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}
