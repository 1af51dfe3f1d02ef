package queue

import "sync"

// Queue is an unbounded FIFO of slots with one consumer, the plugin's
// worker. Any goroutine may push; only the worker calls [Queue.Next].
//
// A slot pushed while the worker waits with nothing to run can be lent to
// its producer instead ([Queue.Push] with lend): it is not queued, the
// worker is not woken, and the producer runs the call itself and gives
// the slot back ([Queue.GiveBack]) when done. Until then the worker takes
// no later slot, so the plugin still sees its events one at a time and in
// order. This is how the first plugin of a mutating event (and every
// plugin of an idle runtime) is called without waking its worker: a
// CreateContainer through one plugin would otherwise pay two goroutine
// hand-offs, and their thread wake-ups, on top of the round trip.
type Queue struct {
	mu     sync.Mutex
	items  []*Slot
	closed bool
	wake   chan struct{}
	// idle is set while the consumer waits in Next with nothing to run.
	idle bool
	// lent is the slot lent to its producer, if any.
	lent *Slot
}

// New returns an empty, open queue.
func New() *Queue { return &Queue{wake: make(chan struct{}, 1)} }

// Push appends s and wakes the worker; it reports false, and does
// nothing, once the queue is closed. With lend set, s is lent to the
// caller instead ([Slot.Lent] tells) if the worker waits with nothing to
// run, nothing is queued and no other slot is lent: the caller must then
// run the call itself and call [Queue.GiveBack].
func (q *Queue) Push(s *Slot, lend bool) bool {
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

// PushQuiet appends s without waking the worker; it reports false once
// the queue is closed. The caller wakes the worker with [Queue.Wake]
// once it has filled s, so that the worker is woken once for s, not
// twice. Until then the worker, if it reaches s, waits for it as for any
// slot. (The runtime library pushes an observe-only plugin's slots so:
// they are filled once the event's request is final.)
func (q *Queue) PushQuiet(s *Slot) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, s)
	return true
}

// Wake wakes the worker for the slots pushed with [Queue.PushQuiet].
func (q *Queue) Wake() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.signal()
}

// GiveBack ends the loan of s (see [Queue.Push]): the worker goes on with
// the slots queued meanwhile. It does nothing for a slot that is not
// lent.
func (q *Queue) GiveBack(s *Slot) {
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

// Close makes Push and PushQuiet fail from now on. The worker still gets
// every slot queued before (it tells their works why they do not run),
// and once none is left and no slot is lent, [Queue.Next] returns nil.
// Close may be called more than once.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.signal()
}

// signal wakes the worker; the caller holds q.mu.
func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Next returns the oldest slot, waiting for one, and, while a slot is
// lent, for it to be given back; it returns nil once the queue is closed,
// empty and no slot is lent. Only the worker calls it; the worker is done
// with the slot it returned (filled and run, offered, or given up) before
// it calls Next again.
func (q *Queue) Next() *Slot {
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
