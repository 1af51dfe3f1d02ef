package adaptation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
)

// SyncFunc is the runtime's side of a plugin's synchronization for a
// runtime that holds a lock of its own around its event calls (as
// containerd and CRI-O do), the alternative to [ListFunc] set with
// [WithSyncFunc]. The Adaptation calls it once per plugin that
// registers, holding none of its own locks. SyncFunc takes the runtime's
// lock, lists the pods and containers that exist, calls take exactly
// once with them while still holding the lock, and returns take's error.
// take returns at once: it records the snapshot and makes the plugin
// synchronizing (its Synchronize is sent afterwards, and events called
// from then on are queued for it); it does not wait for the plugin. The
// updates the plugin asks for in its answer to Synchronize are applied
// later through the runtime's [UpdateFunc], which may take the runtime's
// lock. See the package documentation for the lock contract.
type SyncFunc func(ctx context.Context, take SnapshotFunc) error

// SnapshotFunc hands the runtime's pods and containers to the
// Adaptation; see [SyncFunc]. The objects are read after it returns and
// must not be modified by the runtime afterwards.
type SnapshotFunc func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) error

// WithSyncFunc makes the Adaptation synchronize plugins through f instead
// of a [ListFunc]: New's list argument must then be nil.
func WithSyncFunc(f SyncFunc) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("adaptation: nil SyncFunc")
		}
		c.syncFunc = f
		return nil
	}
}

// errSnapshotTwice is a SyncFunc that called take more than once,
// errSnapshotLate one that called it after returning.
var (
	errSnapshotTwice = errors.New("adaptation: SyncFunc handed over a snapshot twice")
	errSnapshotLate  = errors.New("adaptation: SyncFunc handed over a snapshot after returning")
)

// withSnapshot calls insert with the runtime's pods and containers while
// holding a.mu, so that insert orders the plugin's activation against
// the start of every event call. With a ListFunc, a.mu is taken first
// and ListFunc called under it; with a SyncFunc, SyncFunc is called with
// no lock held and a.mu is taken inside its take, while the runtime
// holds its own lock. Either way, it first waits for the runtime's
// [PluginSyncBlock]s to be released, at most the registration timeout.
// An error of insert is returned as is; a failure to list is wrapped.
func (a *Adaptation) withSnapshot(p *plugin, insert func(pods []*api.PodSandbox, ctrs []*api.Container) error) error {
	return a.snapshot(fmt.Sprintf("plugin %q", p.full), a.cfg.limits.RegistrationTimeout, insert)
}

// snapshot is withSnapshot for what (in errors: `plugin "10-x"`), each
// wait bounded by timeout.
func (a *Adaptation) snapshot(what string, timeout time.Duration, insert func(pods []*api.PodSandbox, ctrs []*api.Container) error) error {
	release, err := a.syncBlocks.lock(a.ctx, timeout)
	if err != nil {
		return fmt.Errorf("synchronizing %s: %w", what, err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(a.ctx, timeout)
	defer cancel()
	if a.cfg.syncFunc == nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		pods, ctrs, err := a.list(ctx)
		if err != nil {
			return fmt.Errorf("listing pods and containers for %s: %w", what, err)
		}
		return insert(pods, ctrs)
	}
	// take may be called after SyncFunc returned (a SyncFunc that gave
	// up waiting for the runtime's lock and left the call behind): then
	// it does nothing.
	var (
		mu        sync.Mutex
		done      bool
		taken     bool
		insertErr error
	)
	err = a.cfg.syncFunc(ctx, func(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case done:
			return errSnapshotLate
		case taken:
			return errSnapshotTwice
		}
		taken = true
		a.mu.Lock()
		defer a.mu.Unlock()
		insertErr = insert(pods, ctrs)
		return insertErr
	})
	mu.Lock()
	defer mu.Unlock()
	done = true
	switch {
	case insertErr != nil:
		return insertErr
	case err != nil:
		// If take inserted the plugin, activate disconnects it.
		return fmt.Errorf("synchronizing %s with the runtime: %w", what, err)
	case !taken:
		return fmt.Errorf("synchronizing %s: SyncFunc returned without handing over a snapshot", what)
	}
	return nil
}

// ErrSyncBlocked is wrapped by the registration error of a plugin whose
// synchronization waited longer than the registration timeout for the
// runtime's [PluginSyncBlock]s.
var ErrSyncBlocked = errors.New("plugin synchronization blocked by the runtime")

// PluginSyncBlock holds off the synchronization of registering plugins
// until Unblock; see [Adaptation.BlockPluginSync].
type PluginSyncBlock struct {
	g    *syncGate
	once sync.Once
}

// Unblock releases the block. It may be called more than once, and on a
// nil block.
func (b *PluginSyncBlock) Unblock() {
	if b == nil || b.g == nil {
		return
	}
	b.once.Do(b.g.unblock)
}

// BlockPluginSync holds off the synchronization of registering plugins
// until the returned block is released, for a runtime that changes its
// state in several steps around an event call and wants no plugin to
// take its snapshot in between. Synchronizations wait for every block
// (each at most the registration timeout, then the plugin's registration
// fails with [ErrSyncBlocked]); BlockPluginSync itself waits while a
// synchronization is waiting or taking its snapshot, which is brief (the
// snapshot is taken, not the plugin's Synchronize answered), so a stream
// of blocks cannot starve plugins. Event calls do not need a block: their
// order against snapshots is kept anyway (see the package documentation).
// After Stop it returns a block that holds off nothing.
func (a *Adaptation) BlockPluginSync() *PluginSyncBlock {
	if !a.syncBlocks.block(a.ctx) {
		return &PluginSyncBlock{}
	}
	return &PluginSyncBlock{g: &a.syncBlocks}
}

// syncGate is a reader-writer gate between the runtime's blocks (readers)
// and snapshots (writers, one at a time), preferring writers; every wait
// on it ends with the Adaptation's context, and a writer's with its
// timeout too.
type syncGate struct {
	mu      sync.Mutex
	blocks  int  // blocks held
	writing bool // a snapshot is being taken
	waiting int  // snapshots waiting for blocks
	// changed is closed and replaced whenever the counts go down.
	changed chan struct{}
}

// changedLocked returns the channel closed at the next change.
func (g *syncGate) changedLocked() chan struct{} {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

// broadcastLocked wakes every waiter.
func (g *syncGate) broadcastLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// block takes a block once no snapshot is waiting or being taken. It
// reports false if done ended first.
func (g *syncGate) block(ctx context.Context) bool {
	for {
		g.mu.Lock()
		if !g.writing && g.waiting == 0 {
			g.blocks++
			g.mu.Unlock()
			return true
		}
		ch := g.changedLocked()
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func (g *syncGate) unblock() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.blocks--
	g.broadcastLocked()
}

// lock waits until no block is held and no other snapshot is being taken,
// at most timeout, and returns the function that ends the snapshot.
func (g *syncGate) lock(ctx context.Context, timeout time.Duration) (func(), error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	g.mu.Lock()
	g.waiting++
	for g.blocks > 0 || g.writing {
		ch := g.changedLocked()
		g.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-t.C:
			err = fmt.Errorf("%w for more than %v", ErrSyncBlocked, timeout)
		case <-ctx.Done():
			err = ErrStopped
		}
		g.mu.Lock()
		if err != nil {
			g.waiting--
			g.broadcastLocked()
			g.mu.Unlock()
			return nil, err
		}
	}
	g.waiting--
	g.writing = true
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.writing = false
		g.broadcastLocked()
	}, nil
}
