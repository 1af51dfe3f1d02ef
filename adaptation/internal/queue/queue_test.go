package queue

import (
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// hangGuard bounds every wait for something that must happen; quiet is
// how long a test watches for something that must not (a busy machine
// can only make such a check miss, never fail it wrongly).
var (
	hangGuard = testscale.D(20 * time.Second)
	quiet     = 50 * time.Millisecond
)

// eventually waits until cond holds, failing the test after hangGuard.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, hangGuard)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitIdle waits until q's consumer waits with nothing to run.
func waitIdle(t *testing.T, q *Queue) {
	t.Helper()
	eventually(t, "the consumer waits with nothing to run", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.idle
	})
}

// consume runs a consumer that sends every slot Next returns to the
// channel it returns, which it closes once Next returned nil.
func consume(q *Queue) <-chan *Slot {
	got := make(chan *Slot)
	go func() {
		for s := q.Next(); s != nil; s = q.Next() {
			got <- s
		}
		close(got)
	}()
	return got
}

// idle returns a new queue and what its consumer gets, once the
// consumer waits with nothing to run.
func idle(t *testing.T) (*Queue, <-chan *Slot) {
	t.Helper()
	q := New()
	got := consume(q)
	waitIdle(t, q)
	return q, got
}

// recv returns the next value of c and whether c is open, failing the
// test if nothing comes within hangGuard.
func recv[T any](t *testing.T, c <-chan T, what string) (v T, open bool) {
	t.Helper()
	select {
	case v, open = <-c:
	case <-time.After(hangGuard):
		t.Fatalf("%s: nothing after %v", what, hangGuard)
	}
	return v, open
}

// silent checks that c yields nothing, and is not closed, for a while.
func silent[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case v, open := <-c:
		t.Fatalf("%s: got %v (open: %v)", what, v, open)
	case <-time.After(quiet):
	}
}

// receive returns the next slot the consumer got.
func receive(t *testing.T, got <-chan *Slot, what string) *Slot {
	t.Helper()
	s, open := recv(t, got, what)
	if !open {
		t.Fatalf("%s: the consumer ended", what)
	}
	return s
}

// inOrder checks that the consumer gets want next, in this order.
func inOrder(t *testing.T, got <-chan *Slot, what string, want ...*Slot) {
	t.Helper()
	for i, w := range want {
		if receive(t, got, what) != w {
			t.Fatalf("%s: slot %d of %d out of order", what, i, len(want))
		}
	}
}

// ended waits for the consumer to end.
func ended(t *testing.T, got <-chan *Slot, what string) {
	t.Helper()
	if s, open := recv(t, got, what); open {
		t.Fatalf("%s: the consumer got slot %p instead of ending", what, s)
	}
}

func mkSlot() *Slot { return NewSlot(api.Event_CREATE_CONTAINER, "pod", "ctr", false) }

// TestQueueOrder checks that the consumer gets the slots in the order
// they were pushed, whether it was waiting or busy, and one at a time.
func TestQueueOrder(t *testing.T) {
	q := New()
	var want []*Slot
	for range 5 { // queued before the consumer starts
		s := mkSlot()
		if !q.Push(s, false) {
			t.Fatal("push to an open queue failed")
		}
		want = append(want, s)
	}
	got := consume(q)
	inOrder(t, got, "queued before the consumer started", want[:2]...)
	for range 5 { // pushed while the consumer works
		s := mkSlot()
		q.Push(s, false)
		want = append(want, s)
	}
	inOrder(t, got, "queued while the consumer worked", want[2:]...)
	waitIdle(t, q)
	s := mkSlot()
	q.Push(s, false) // to a waiting consumer: wakes it
	inOrder(t, got, "pushed to a waiting consumer", s)
	q.Close()
	ended(t, got, "closed and empty")
}

// TestQueueLend checks the loan of a slot to its dispatcher: only when
// the consumer is idle, and the consumer takes no later slot until the
// loan ends, so the plugin still sees its events in order.
func TestQueueLend(t *testing.T) {
	q, got := idle(t)
	lent := mkSlot()
	if !q.Push(lent, true) || !lent.Lent() {
		t.Fatal("a slot pushed to an idle consumer was not lent")
	}
	second, third := mkSlot(), mkSlot()
	q.Push(second, true)
	q.Push(third, false)
	if second.Lent() {
		t.Error("a second slot was lent while the first was out")
	}
	silent(t, got, "while a slot was lent")
	q.GiveBack(second) // not lent: no effect
	silent(t, got, "after giving back a slot that was not lent")
	q.GiveBack(lent)
	inOrder(t, got, "after the loan ended", second, third)

	// A busy consumer gets the slot queued, not lent.
	waitIdle(t, q)
	busy := mkSlot()
	q.Push(busy, false)
	eventually(t, "the consumer took the slot", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.items) == 0 && !q.idle // it then waits to hand it over
	})
	queued := mkSlot()
	if q.Push(queued, true); queued.Lent() {
		t.Fatal("a slot was lent while the consumer was busy")
	}
	inOrder(t, got, "queued to a busy consumer", busy, queued)

	// Closing with a slot lent: the consumer ends once it is given back.
	waitIdle(t, q)
	last := mkSlot()
	q.Push(last, true)
	q.Close()
	silent(t, got, "closed while a slot was lent")
	q.GiveBack(last)
	ended(t, got, "closed, the loan over")
}

// TestQueueClose checks close: the consumer drains what was queued, then
// ends, also when it was waiting with nothing to run; pushes fail after.
func TestQueueClose(t *testing.T) {
	t.Run("waiting", func(t *testing.T) {
		q, got := idle(t)
		q.Close()
		ended(t, got, "closed while waiting")
		q.Close() // again: no effect
	})
	t.Run("drains", func(t *testing.T) {
		q := New()
		queued := []*Slot{mkSlot(), mkSlot(), mkSlot()}
		for _, s := range queued {
			q.Push(s, false)
		}
		q.Close()
		for _, push := range []func(*Slot) bool{func(s *Slot) bool { return q.Push(s, false) },
			func(s *Slot) bool { return q.Push(s, true) }, q.PushQuiet} {
			if s := mkSlot(); push(s) || s.Lent() {
				t.Error("a push to a closed queue succeeded")
			}
		}
		got := consume(q)
		inOrder(t, got, "draining", queued...)
		ended(t, got, "drained")
	})
}

// TestQueuePushQuiet checks that a slot pushed quietly does not wake a
// waiting consumer until Wake, and keeps its place among the others.
func TestQueuePushQuiet(t *testing.T) {
	q, got := idle(t)
	observer := mkSlot()
	if !q.PushQuiet(observer) {
		t.Fatal("quiet push to an open queue failed")
	}
	silent(t, got, "after a quiet push")
	q.Wake()
	inOrder(t, got, "woken", observer)

	// Between loud pushes it keeps its place.
	waitIdle(t, q)
	first, mid, last := mkSlot(), mkSlot(), mkSlot()
	q.Push(first, false)
	q.PushQuiet(mid)
	q.Push(last, false)
	inOrder(t, got, "mixed pushes", first, mid, last)
	q.Close()
	ended(t, got, "closed")
}
