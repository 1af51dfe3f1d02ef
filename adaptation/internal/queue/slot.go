package queue

import (
	"sync/atomic"

	"github.com/nrikit/nrikit/api"
)

// Work is what a slot runs. It runs exactly once, on the worker or on
// the dispatcher that took the turn, with a nil skip to deliver the call,
// or with the reason it is not delivered, which the runtime library
// decides (the plugin is gone, the event was filtered or opted out of).
type Work func(skip error)

// Slot is one event's place in a plugin's queue. Its producer, the
// dispatcher that reserved it, either fills it exactly once ([Slot.Fill]),
// takes the turn the worker offers ([Slot.TakeTurn]) or, if it was lent,
// runs the call itself and gives it back ([Queue.GiveBack]). Its consumer
// is the worker that got it from [Queue.Next].
type Slot struct {
	event        api.Event
	podID, ctrID string
	catchUp      bool
	// fill receives the work exactly once; nil gives the slot up.
	fill chan Work

	// The hand-over of the turn (see TakeTurn): a worker that reaches a
	// slot (not catching up) decides skip, marks the slot offered and
	// waits for fill or done.
	state atomic.Int32
	skip  error         // the worker's verdict; read after taking the turn
	done  chan struct{} // closed by the dispatcher that took the turn

	// lent is set when the slot was lent to its dispatcher at push time
	// (see Queue.Push): the worker never sees it.
	lent bool
}

// Hand-over states of a slot.
const (
	slotPending int32 = iota // the worker has not reached the slot
	slotOffered              // the worker waits at the slot, skip is set
	slotTaken                // a dispatcher runs the work itself
)

// NewSlot returns a slot for event about the pod podID and its container
// ctrID (either empty where the event has none; api.Event_UNKNOWN for
// work that is no event). catchUp marks a slot reserved while the plugin
// synchronized: its worker filters it against the snapshot (see
// [CatchUp]); such a slot is never offered, only filled.
func NewSlot(event api.Event, podID, ctrID string, catchUp bool) *Slot {
	return &Slot{event: event, podID: podID, ctrID: ctrID, catchUp: catchUp, fill: make(chan Work, 1),
		done: make(chan struct{})}
}

// Event is the event the slot was reserved for.
func (s *Slot) Event() api.Event { return s.event }

// PodID is the ID of the event's pod ("" if none).
func (s *Slot) PodID() string { return s.podID }

// ContainerID is the ID of the event's container ("" if none).
func (s *Slot) ContainerID() string { return s.ctrID }

// CatchUp reports whether the slot was reserved while the plugin
// synchronized.
func (s *Slot) CatchUp() bool { return s.catchUp }

// Lent reports whether [Queue.Push] lent the slot to its producer: the
// producer then runs the call itself, on its own goroutine, and gives the
// slot back with [Queue.GiveBack]; it never fills it.
func (s *Slot) Lent() bool { return s.lent }

// Fill hands w to the worker; a nil w gives the slot up (the event does
// not happen for the plugin: the worker goes on). The producer calls it
// exactly once for a slot that was not lent and whose turn it did not
// take (the worker waits for it), and never for another. It never
// blocks.
func (s *Slot) Fill(w Work) { s.fill <- w }

// TakeTurn reports whether the worker waits at s, offering its turn (see
// [Slot.Offer]); then the caller has the turn: it runs the call itself,
// on its own goroutine, with skip, the worker's verdict, and calls
// [Slot.Finish] when done, and it does not fill s. Otherwise the caller
// fills s. This is how a mutating event, whose plugins are called one
// after the other, saves the two goroutine switches (and, on an idle
// runtime, the thread wake-ups) of handing each call to the plugin's
// worker and back.
func (s *Slot) TakeTurn() (skip error, ok bool) {
	if !s.state.CompareAndSwap(slotOffered, slotTaken) {
		return nil, false
	}
	return s.skip, true
}

// Finish ends a turn taken with [Slot.TakeTurn]: the worker goes on to
// the next slot.
func (s *Slot) Finish() { close(s.done) }

// Offer is how the worker delivers a slot that is not catching up: it
// records skip, its verdict on the slot's event (nil: deliver), offers
// its turn to the producer and waits until the producer took the turn
// and finished it (taken), or filled the slot instead: w is then the work
// for the worker to run, nil if the producer gave the slot up. The wait
// is the producer's to bound: every producer fills its slots or takes
// their turns, as its event goes on, fails or is given up.
func (s *Slot) Offer(skip error) (w Work, taken bool) {
	s.skip = skip
	s.state.Store(slotOffered)
	select {
	case <-s.done:
		return nil, true
	case w := <-s.fill:
		return w, false
	}
}

// Await is how the worker delivers a slot that is catching up: it waits
// for the slot to be filled and returns the work, nil if the producer
// gave the slot up. As for [Slot.Offer], the producer bounds the wait.
func (s *Slot) Await() Work { return <-s.fill }
