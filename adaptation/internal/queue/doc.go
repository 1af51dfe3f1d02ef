// Package queue orders the calls the runtime library makes to one plugin.
//
// Every plugin has a [Queue] and one consumer of it, the plugin's worker
// goroutine, which the runtime library starts and stops (the package
// starts no goroutine). An event reserves a [Slot] in the queue of every
// plugin it will call at the moment it starts, under the registry lock of
// the runtime library, so that every queue orders concurrent events the
// same way; it fills each slot with the plugin's call ([Slot.Fill]) when
// it gets to that plugin: at once for a notification, after the previous
// plugin answered for a mutating event. The worker takes the slots in the
// order they were pushed ([Queue.Next]) and waits for each to be filled
// before it takes the next, so a plugin sees its events one at a time and
// in the order they started. Because every queue orders the same events
// the same way, no wait can form a cycle.
//
// The calls of a mutating event go to one plugin after the other, and the
// dispatcher waits for each answer. Handing each call to the worker and
// back would cost two goroutine switches per plugin, and on an idle
// runtime two thread wake-ups; the queue saves them in two ways, without
// giving up the order:
//
//   - a slot pushed while the worker waits with nothing to run is lent to
//     its dispatcher ([Queue.Push] with lend, [Slot.Lent]): the worker is
//     not woken and takes no later slot until the dispatcher gives the
//     slot back ([Queue.GiveBack]);
//   - a worker that reaches a slot before it is filled offers its turn
//     ([Slot.Offer]), and the dispatcher, instead of filling the slot,
//     takes the turn ([Slot.TakeTurn]), runs the call on its own
//     goroutine and ends the turn ([Slot.Finish]).
//
// A plugin that registers synchronizes first: it is sent the runtime's
// pods and containers, while the events that start meanwhile are queued
// behind the Synchronize as catching up ([NewSlot] with catchUp). A
// [CatchUp] filters those against the snapshot, so that the plugin sees
// every pod and container exactly once.
//
// The queue knows nothing of the calls it orders: a [Work] is run with
// nil or with the reason the worker gives for not delivering it (the
// plugin is gone, the event was filtered), which the runtime library
// defines and its dispatch judges.
package queue
