// Package behavior is what the interoperability test plugins do, in
// nrikit's api types, independent of the stub library they are built
// with: the upstream-stub plugin and the nrikit-stub plugin both delegate
// their handlers to a Behavior, converting messages through their wire
// encoding where needed.
package behavior

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/fixture"
)

// Mode selects a Behavior.
type Mode string

// The modes of the test plugins.
const (
	// Observe subscribes to every event. CreateContainer answers with
	// fixture.FullAdjustment, an update of fixture.OtherCtrID and an
	// eviction of fixture.ThirdCtrID; UpdateContainer with updates of the
	// container itself and of OtherCtrID and an eviction; StopContainer
	// and Synchronize with an update of OtherCtrID. Validation accepts.
	// Other containers are updated only if Synchronize reported them
	// (instead of OtherCtrID, the first other one Synchronize reported),
	// and evicted only if Synchronize reported ThirdCtrID.
	Observe Mode = "observe"
	// Reject subscribes to ValidateContainerAdjustment only and rejects
	// every container, with RejectReason.
	Reject Mode = "reject"
	// Unsupported subscribes to CreateContainer and UpdatePodSandbox, for
	// a runtime that does not deliver the latter.
	Unsupported Mode = "unsupported"
	// Sync subscribes to RunPodSandbox and answers Synchronize with an
	// update of the last container it was given.
	Sync Mode = "sync"
	// Part1 to Part4 ("part1" ...) answer CreateContainer with
	// fixture.PipelinePart; Conflict1 and Conflict2 ("conflict1", ...)
	// with fixture.ConflictPart. All subscribe to CreateContainer only.
	PartPrefix     Mode = "part"
	ConflictPrefix Mode = "conflict"
	// Env subscribes to CreateContainer only and adds EnvKey=EnvValue to
	// every container: a plugin simple enough for any runtime's scenario.
	Env Mode = "env"
)

// The environment variable a plugin in Env mode injects.
const (
	EnvKey   = "INTEROP_PLUGIN"
	EnvValue = "upstream-or-nrikit-stub"
)

// RejectReason is the reason of a plugin in Reject mode.
const RejectReason = "interop policy forbids adjusting this container"

// Memory limits (MiB) and CPU shares of the updates of OtherCtrID, per
// request, so a test can tell which request an update came from.
const (
	CreateUpdateMiB      = 300
	UpdateUpdateMiB      = 400
	StopUpdateMiB        = 500
	SyncUpdateMiB        = 600
	UnsolicitedUpdateMiB = 700
	SelfUpdateMiB        = 2500
)

// Behavior is the logic of one test plugin. It is safe for concurrent
// use.
type Behavior struct {
	mode Mode
	part int // for PartPrefix and ConflictPrefix modes

	mu    sync.Mutex
	known []string // containers learned in Synchronize, in order
}

// target returns want if the plugin learned of that container in
// Synchronize, else the first container it learned of other than except,
// else "": a plugin updates and evicts only containers that exist.
func (b *Behavior) target(want, except string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slices.Contains(b.known, want) {
		return want
	}
	for _, id := range b.known {
		if id != except {
			return id
		}
	}
	return ""
}

func (b *Behavior) update(want, except string, mib int64) []*api.ContainerUpdate {
	if id := b.target(want, except); id != "" {
		return []*api.ContainerUpdate{fixture.Update(id, mib, uint64(mib))}
	}
	return nil
}

// New returns the Behavior of mode.
func New(mode string) (*Behavior, error) {
	m := Mode(mode)
	switch m {
	case Observe, Reject, Unsupported, Sync, Env:
		return &Behavior{mode: m}, nil
	}
	for _, prefix := range []Mode{PartPrefix, ConflictPrefix} {
		if rest, ok := strings.CutPrefix(mode, string(prefix)); ok {
			n, err := strconv.Atoi(rest)
			if err != nil || n < 1 || n > fixture.PipelineParts {
				return nil, fmt.Errorf("behavior: invalid mode %q", mode)
			}
			return &Behavior{mode: prefix, part: n}, nil
		}
	}
	return nil, fmt.Errorf("behavior: unknown mode %q", mode)
}

// Subscription returns the events the plugin subscribes to; 0 means every
// event it implements.
func (b *Behavior) Subscription() api.EventMask {
	switch b.mode {
	case Reject:
		return api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	case Unsupported:
		return api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX)
	case Sync:
		return api.MaskOf(api.Event_RUN_POD_SANDBOX)
	case PartPrefix, ConflictPrefix, Env:
		return api.MaskOf(api.Event_CREATE_CONTAINER)
	}
	return 0
}

// CreateContainer answers the creation of ctr.
func (b *Behavior) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	switch b.mode {
	case Observe:
		upd := b.update(fixture.OtherCtrID, ctr.GetId(), CreateUpdateMiB)
		var evict []*api.ContainerEviction
		if b.target(fixture.ThirdCtrID, "") == fixture.ThirdCtrID {
			evict = []*api.ContainerEviction{fixture.Eviction()}
		}
		return fixture.FullAdjustment(), upd, evict, nil
	case PartPrefix:
		adj, upd := fixture.PipelinePart(b.part)
		return adj, upd, nil, nil
	case ConflictPrefix:
		return fixture.ConflictPart(b.part), nil, nil, nil
	case Env:
		adj := &api.ContainerAdjustment{}
		adj.AddEnv(EnvKey, EnvValue)
		return adj, nil, nil, nil
	}
	return nil, nil, nil, nil
}

// UpdateContainer answers the update of ctr's resources.
func (b *Behavior) UpdateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	if b.mode != Observe {
		return nil, nil, nil
	}
	upd := append([]*api.ContainerUpdate{fixture.Update(ctr.GetId(), SelfUpdateMiB, SelfUpdateMiB)},
		b.update(fixture.OtherCtrID, ctr.GetId(), UpdateUpdateMiB)...)
	var evict []*api.ContainerEviction
	if b.target(fixture.ThirdCtrID, "") == fixture.ThirdCtrID {
		evict = []*api.ContainerEviction{fixture.Eviction()}
	}
	return upd, evict, nil
}

// StopContainer answers the stop of a container.
func (b *Behavior) StopContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	if b.mode != Observe {
		return nil, nil
	}
	return b.update(fixture.OtherCtrID, ctr.GetId(), StopUpdateMiB), nil
}

// Synchronize answers the runtime's state.
func (b *Behavior) Synchronize(_ context.Context, _ []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	b.mu.Lock()
	b.known = b.known[:0]
	for _, c := range ctrs {
		b.known = append(b.known, c.GetId())
	}
	b.mu.Unlock()
	switch b.mode {
	case Observe:
		return b.update(fixture.OtherCtrID, "", SyncUpdateMiB), nil
	case Sync:
		if len(ctrs) > 0 {
			return []*api.ContainerUpdate{fixture.Update(ctrs[len(ctrs)-1].GetId(), SyncUpdateMiB, SyncUpdateMiB)}, nil
		}
	}
	return nil, nil
}

// Validate checks a merged adjustment.
func (b *Behavior) Validate(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if b.mode == Reject {
		return fmt.Errorf("container %q: %s", req.GetContainer().GetName(), RejectReason)
	}
	return nil
}

// Unsolicited returns the updates the plugin sends on its own after it
// registered (it knows of fixture.OtherCtrID without Synchronize: the
// update may race with it).
func (b *Behavior) Unsolicited() []*api.ContainerUpdate {
	return []*api.ContainerUpdate{fixture.Update(fixture.OtherCtrID, UnsolicitedUpdateMiB, UnsolicitedUpdateMiB)}
}
