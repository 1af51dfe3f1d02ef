package queue

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// offered is what Offer returned on the worker.
type offered struct {
	w     Work
	taken bool
}

// offer runs Offer(skip) on a goroutine of its own, as the worker does,
// and returns where its result arrives.
func offer(s *Slot, skip error) <-chan offered {
	out := make(chan offered, 1)
	go func() {
		w, taken := s.Offer(skip)
		out <- offered{w, taken}
	}()
	return out
}

// result waits for Offer's result.
func result(t *testing.T, c <-chan offered) offered {
	t.Helper()
	o, _ := recv(t, c, "Offer")
	return o
}

// TestSlotTurn checks the hand-over of a slot's turn: a dispatcher takes
// it only while the worker offers it, gets the worker's verdict, and the
// worker goes on when the turn is finished; otherwise the worker gets the
// work filled in, or nothing if the slot was given up.
func TestSlotTurn(t *testing.T) {
	verdict := errors.New("opted out")

	t.Run("taken", func(t *testing.T) {
		s := mkSlot()
		if _, ok := s.TakeTurn(); ok {
			t.Fatal("took the turn before the worker offered it")
		}
		res := offer(s, verdict)
		var skip error
		eventually(t, "the worker offers the turn", func() bool {
			var ok bool
			skip, ok = s.TakeTurn()
			return ok
		})
		if skip != verdict {
			t.Errorf("turn taken with skip %v, want the worker's verdict %v", skip, verdict)
		}
		if _, ok := s.TakeTurn(); ok {
			t.Error("the turn was taken twice")
		}
		silent(t, res, "Offer before the turn was finished")
		s.Finish()
		if o := result(t, res); !o.taken || o.w != nil {
			t.Errorf("Offer returned %+v, want taken", o)
		}
	})

	t.Run("filled", func(t *testing.T) {
		s := mkSlot()
		ran := 0
		s.Fill(func(error) { ran++ }) // before the worker reaches it
		o := result(t, offer(s, nil))
		if o.taken || o.w == nil {
			t.Fatalf("Offer returned %+v, want the work filled in", o)
		}
		o.w(nil)
		if ran != 1 {
			t.Error("the work returned is not the one filled in")
		}
	})

	t.Run("given up", func(t *testing.T) {
		s := mkSlot()
		res := offer(s, nil)
		eventually(t, "the worker offers the turn", func() bool { return s.state.Load() == slotOffered })
		s.Fill(nil)
		if o := result(t, res); o.taken || o.w != nil {
			t.Errorf("Offer returned %+v for a slot given up", o)
		}
	})

	t.Run("catching up", func(t *testing.T) {
		s := NewSlot(api.Event_CREATE_CONTAINER, "pod", "ctr", true)
		got := make(chan Work, 1)
		go func() { got <- s.Await() }()
		silent(t, got, "Await before the slot was filled")
		if _, ok := s.TakeTurn(); ok {
			t.Fatal("took the turn of a slot the worker awaits")
		}
		s.Fill(func(error) {})
		if w, _ := recv(t, got, "Await"); w == nil {
			t.Error("Await returned no work for a filled slot")
		}
	})
}

// TestQueueOneAtATime runs producers against one worker, each producer
// pushing its slots one after the other with lending and taking every
// turn it can, as mutating events do, and checks that the works never
// overlap and that each producer's works run in the order it pushed them,
// wherever they run.
func TestQueueOneAtATime(t *testing.T) {
	const producers, perProducer = 4, 300
	q := New()
	var (
		running atomic.Int32
		overlap atomic.Bool
		mu      sync.Mutex
		order   [producers][]int
	)
	work := func(p, i int) Work {
		return func(skip error) {
			if skip != nil {
				t.Errorf("work %d/%d run with skip %v", p, i, skip)
			}
			if running.Add(1) != 1 {
				overlap.Store(true)
			}
			mu.Lock()
			order[p] = append(order[p], i)
			mu.Unlock()
			running.Add(-1)
		}
	}
	worker := make(chan struct{})
	go func() {
		defer close(worker)
		for s := q.Next(); s != nil; s = q.Next() {
			if w, taken := s.Offer(nil); !taken && w != nil {
				w(nil)
			}
		}
	}()
	var lent, taken atomic.Int32
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				s := mkSlot()
				if !q.Push(s, true) {
					t.Error("push to an open queue failed")
					return
				}
				w := work(p, i)
				if s.Lent() {
					lent.Add(1)
					w(nil)
					q.GiveBack(s)
					continue
				}
				// As a later plugin of a mutating event: its turn
				// comes after the plugins before it answered.
				skip, ok := s.TakeTurn()
				for try := 0; !ok && try < i%4; try++ {
					runtime.Gosched()
					skip, ok = s.TakeTurn()
				}
				if ok {
					taken.Add(1)
					w(skip)
					s.Finish()
					continue
				}
				s.Fill(w)
			}
		})
	}
	wg.Wait()
	q.Close()
	recv(t, worker, "the worker ending")
	if overlap.Load() {
		t.Error("two works ran at once")
	}
	for p, got := range order {
		if len(got) != perProducer {
			t.Errorf("producer %d: %d works ran, want %d", p, len(got), perProducer)
			continue
		}
		for i, n := range got {
			if n != i {
				t.Errorf("producer %d: work %d ran as number %d", p, n, i)
				break
			}
		}
	}
	t.Logf("%d works ran lent, %d in a taken turn, the rest on the worker", lent.Load(), taken.Load())
}
