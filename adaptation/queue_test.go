package adaptation

import (
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// waitIdle waits until q's consumer waits with nothing to run.
func waitIdle(t *testing.T, q *queue) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		q.mu.Lock()
		idle := q.idle
		q.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer never became idle")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQueueLend checks the loan of a slot to its dispatcher: only when
// the consumer is idle, and the consumer takes no later slot until the
// loan ends, so the plugin still sees its events in order.
func TestQueueLend(t *testing.T) {
	q := newQueue()
	got := make(chan *slot)
	go func() {
		for s := q.next(); s != nil; s = q.next() {
			got <- s
		}
		close(got)
	}()
	mk := func() *slot { return newSlot(api.Event_CREATE_CONTAINER, "pod", "ctr", false) }

	waitIdle(t, q)
	lent := mk()
	if !q.push(lent, true) || !lent.lent {
		t.Fatal("a slot pushed to an idle consumer was not lent")
	}
	second, third := mk(), mk()
	q.push(second, true)
	q.push(third, false)
	if second.lent {
		t.Error("a second slot was lent while the first was out")
	}
	select {
	case s := <-got:
		t.Fatalf("the consumer took slot %p while a slot was lent", s)
	case <-time.After(50 * time.Millisecond):
	}
	q.giveBack(lent)
	for i, want := range []*slot{second, third} {
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("slot %d out of order", i)
			}
		case <-time.After(hangGuard):
			t.Fatalf("slot %d never delivered after the loan ended", i)
		}
	}

	// A busy consumer gets the slot queued, not lent.
	waitIdle(t, q)
	busy := mk()
	q.push(busy, false)
	for { // until the consumer took busy (it then waits to hand it over)
		q.mu.Lock()
		taken := len(q.items) == 0 && !q.idle
		q.mu.Unlock()
		if taken {
			break
		}
		time.Sleep(time.Millisecond)
	}
	queued := mk()
	if q.push(queued, true); queued.lent {
		t.Fatal("a slot was lent while the consumer was busy")
	}
	if <-got != busy || <-got != queued {
		t.Fatal("slots out of order")
	}

	// Closing with a slot lent: the consumer ends once it is given back.
	waitIdle(t, q)
	last := mk()
	q.push(last, true)
	q.close()
	select {
	case _, ok := <-got:
		if !ok {
			t.Fatal("the consumer ended while a slot was lent")
		}
	case <-time.After(50 * time.Millisecond):
	}
	q.giveBack(last)
	select {
	case _, ok := <-got:
		if ok {
			t.Fatal("the consumer got a slot after close")
		}
	case <-time.After(hangGuard):
		t.Fatal("the consumer did not end after the loan ended")
	}
}
