package adaptation

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/nrikit/nrikit/api"
)

// Every call to a plugin, except registration and Shutdown at Stop, runs on
// the plugin's own worker goroutine (or, for mutating events, on the
// dispatcher's while the worker waits at the slot, see slot.takeTurn),
// in the order in which the calls were
// reserved. A dispatcher reserves a slot in the queue of every plugin it
// will call at the moment its event starts (under the registry lock, so
// all plugins see concurrent events in the same order), and fills the slot
// with the work when it gets to that plugin: immediately for notifications,
// after the previous plugin answered for mutating events. The worker waits
// for each slot to be filled, then runs the work, or tells it why it does
// not run. Because every queue orders the same events the same way, no
// wait can form a cycle.

// work is what a slot runs. The worker calls it exactly once: with a nil
// error to deliver the event, or with the reason it is not delivered
// ([errPluginGone], [errFiltered], [errOptedOut]).
type work func(skip error)

// errFiltered tells a work that the plugin saw the event's object in its
// Synchronize snapshot (creation), or never saw it (removal).
var errFiltered = errors.New("event filtered for a synchronizing plugin")

// errOptedOut tells a work that the plugin opted out of the event's pod
// or container after the event was queued for it.
var errOptedOut = errors.New("plugin opted out of the event's object")

// slot is one event's place in a plugin's queue.
type slot struct {
	event        api.Event
	podID, ctrID string
	// catchUp is set for slots reserved while the plugin synchronized;
	// the worker filters them against the snapshot.
	catchUp bool
	// fill receives the work exactly once; nil gives the slot up.
	fill chan work

	// The hand-over of the turn (see takeTurn): a worker that reaches a
	// slot (not catching up) decides skip, marks the slot offered and
	// waits for fill or done.
	state atomic.Int32
	skip  error         // the worker's verdict; read after taking the turn
	done  chan struct{} // closed by the dispatcher that took the turn

	// lent is set when the slot was lent to its dispatcher at reserve
	// time (see queue.push): the worker never sees it.
	lent bool
}

// Hand-over states of a slot.
const (
	slotPending int32 = iota // the worker has not reached the slot
	slotOffered              // the worker waits at the slot, skip is set
	slotTaken                // a dispatcher runs the work itself
)

func newSlot(event api.Event, podID, ctrID string, catchUp bool) *slot {
	return &slot{event: event, podID: podID, ctrID: ctrID, catchUp: catchUp, fill: make(chan work, 1),
		done: make(chan struct{})}
}

// takeTurn reports whether the worker is waiting at s; the caller then
// runs the work itself, on its own goroutine, with s.skip, and calls
// finish when done. This is how a mutating event, whose plugins are
// called one after the other, saves the two goroutine switches (and, on
// an idle runtime, the thread wake-ups) of handing each call to the
// plugin's worker and back. Otherwise the caller fills the slot.
func (s *slot) takeTurn() bool { return s.state.CompareAndSwap(slotOffered, slotTaken) }

// finish ends a turn taken with takeTurn: the worker goes on.
func (s *slot) finish() { close(s.done) }

// queue is an unbounded FIFO of slots with one consumer.
//
// A slot pushed while the consumer waits with nothing to run can be lent
// to its dispatcher instead (push with lend): it is not queued, the
// consumer is not woken, and the dispatcher runs the work itself and
// gives the slot back (giveBack) when done. Until then the consumer takes
// no later slot, so the plugin still sees its events one at a time and in
// order. This is how the first plugin of a mutating event (and every
// plugin of an idle runtime) is called without waking its worker: a
// CreateContainer through one plugin would otherwise pay two goroutine
// hand-offs, and their thread wake-ups, on top of the round trip.
type queue struct {
	mu     sync.Mutex
	items  []*slot
	closed bool
	wake   chan struct{}
	// idle is set while the consumer waits in next with nothing to run.
	idle bool
	// lent is the slot lent to its dispatcher, if any.
	lent *slot
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

// push appends s; it reports false once the queue is closed. With lend
// set, s is lent to the caller instead if the consumer is idle (s.lent
// tells): the caller must then run the work itself and call giveBack.
func (q *queue) push(s *slot, lend bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if lend && q.idle && q.lent == nil && len(q.items) == 0 {
		q.lent, s.lent = s, true
		return true
	}
	q.items = append(q.items, s)
	q.signal()
	return true
}

// giveBack ends the loan of s (see push): the consumer goes on with the
// slots queued meanwhile.
func (q *queue) giveBack(s *slot) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lent != s {
		return
	}
	q.lent = nil
	if len(q.items) > 0 || q.closed {
		q.signal()
	}
}

// close makes push fail; the consumer drains what is queued, then next
// returns nil.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next returns the oldest slot, waiting for one (and for a lent slot to
// be given back); nil once the queue is closed and empty.
func (q *queue) next() *slot {
	for {
		q.mu.Lock()
		if q.lent == nil && len(q.items) > 0 {
			s := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.idle = false
			q.mu.Unlock()
			return s
		}
		if q.lent == nil && q.closed {
			q.mu.Unlock()
			return nil
		}
		q.idle = true
		q.mu.Unlock()
		<-q.wake
	}
}

// catchUp filters the events reserved for a plugin while it synchronized,
// so that it sees every pod and container exactly once: an object in its
// snapshot is not created again, and an object it never saw is not
// removed. It is owned by the plugin's worker.
type catchUp struct {
	pods, ctrs map[string]struct{}
}

func newCatchUp(pods []*api.PodSandbox, ctrs []*api.Container) *catchUp {
	c := &catchUp{pods: make(map[string]struct{}, len(pods)), ctrs: make(map[string]struct{}, len(ctrs))}
	for _, p := range pods {
		c.pods[p.GetId()] = struct{}{}
	}
	for _, ctr := range ctrs {
		c.ctrs[ctr.GetId()] = struct{}{}
	}
	return c
}

// admit reports whether the event of s is delivered, and records the
// objects it creates or removes.
func (c *catchUp) admit(s *slot) bool {
	switch s.event {
	case api.Event_RUN_POD_SANDBOX:
		return add(c.pods, s.podID)
	case api.Event_CREATE_CONTAINER:
		return add(c.ctrs, s.ctrID)
	case api.Event_REMOVE_POD_SANDBOX:
		return remove(c.pods, s.podID)
	case api.Event_REMOVE_CONTAINER:
		return remove(c.ctrs, s.ctrID)
	}
	return true
}

func add(set map[string]struct{}, id string) bool {
	if _, ok := set[id]; ok {
		return false
	}
	set[id] = struct{}{}
	return true
}

func remove(set map[string]struct{}, id string) bool {
	if _, ok := set[id]; !ok {
		return false
	}
	delete(set, id)
	return true
}
