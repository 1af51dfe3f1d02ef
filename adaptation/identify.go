package adaptation

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/identity"
)

// The identity of a plugin (package identity): a launched plugin is who
// its file says (identity.Launched, at registration); an external one is
// derived from its connection when it registers (identify), once per
// connection. The identity decides whether an external plugin may
// replace a connected one of its name (admit: only the same identity
// may), which grant it gets and whether it counts as a required plugin
// (the policy's identity sections, grant.go), and is logged at
// registration.

// digestCacheSize is how many executables' digests the Adaptation keeps.
const digestCacheSize = 64

// maxProcCgroup bounds what readCgroup reads.
const maxProcCgroup = 64 << 10

// identify derives the identity of the external plugin registering as
// full from its peer (nil: the connection's credentials are unknown, as
// for a ServeConn of a connection that is not a unix socket): what /proc
// shows of its process, and the container it runs in, from the runtime's
// own list of pods and containers (ListFunc or SyncFunc). Reading the
// process is bounded by a quarter of the registration timeout, and so is
// the listing, so that the plugin is configured within its registration
// timeout. It does not fail: what could not be told is said in the
// identity.
func (a *Adaptation) identify(full string, peer *identity.Peer) *identity.Identity {
	id := &identity.Identity{Kind: identity.External}
	if peer == nil {
		id.Unlocated = "the connection's peer credentials are unknown"
		return id
	}
	bound := a.cfg.limits.RegistrationTimeout / 4
	ctx, cancel := context.WithTimeout(a.ctx, bound)
	defer cancel()
	id.Process = peer.Inspect(ctx, identity.InspectOptions{ProcRoot: a.cfg.procRoot, HashTimeout: bound, Digests: a.digests})
	if id.Process.Cgroup == "" {
		id.Unlocated = "the process's cgroup is unknown"
		return id
	}
	var (
		pods []*api.PodSandbox
		ctrs []*api.Container
	)
	err := a.snapshot(fmt.Sprintf("the identity of plugin %q", full), bound, func(p []*api.PodSandbox, c []*api.Container) error {
		pods, ctrs = p, c // read after the snapshot (ListFunc, SnapshotFunc)
		return nil
	})
	if err != nil {
		id.Unlocated = err.Error()
		return id
	}
	id.Container = identity.Locate(id.Process, pods, ctrs, a.readCgroup)
	return id
}

// readCgroup returns the text of /proc/PID/cgroup, for identity.Locate.
func (a *Adaptation) readCgroup(pid int) (string, error) {
	root := a.cfg.procRoot
	if root == "" {
		root = identity.DefaultProcRoot
	}
	f, err := os.Open(filepath.Join(root, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProcCgroup))
	return string(b), err
}
