package worker

import (
	"container/heap"
	"time"
)

// storeClock runs the stores queued on a lane from one timer. A timer for
// each conversation cost a timer and its closure (128 bytes) while the
// conversation was live, a timer operation on the runtime's heap at each
// store, and a goroutine at each firing to queue its one store on the
// lane. Due times are rounded to a grain (see roundUp), so that many
// stores share a time; the clock keeps the states queued for each time,
// and its timer, set for the earliest, queues one task that runs them
// all. It is used on its lane only, but for fire, which the timer runs.
type storeClock struct {
	due   map[int64][]*convState // the states queued for each time (Unix nanoseconds)
	times timeHeap               // those times, earliest first
	timer *time.Timer
	armed int64  // the time the timer is set for; 0: not set
	fire  func() // what the timer runs: queue the due stores on the lane
	taken []queuedStore
}

// queuedStore is a state queued for a store at a time. A state queued
// again, for an earlier time, stays in the queue of the later one too: it
// is stored there only if that is still its time (see snapshotStore.runStores).
type queuedStore struct {
	st *convState
	at int64
}

// add queues st for at and sets the timer for it when that is earlier than
// the time it is set for.
func (c *storeClock) add(st *convState, at time.Time) {
	t := at.UnixNano()
	if c.due == nil {
		c.due = make(map[int64][]*convState)
	}
	queued, ok := c.due[t]
	if !ok {
		heap.Push(&c.times, t)
	}
	c.due[t] = append(queued, st)
	c.arm()
}

// take removes the states queued for now or earlier and returns them; the
// caller runs them, then calls done. The slice is reused by the next take.
func (c *storeClock) take(now time.Time) []queuedStore {
	c.armed = 0 // the timer fired
	n := now.UnixNano()
	c.taken = c.taken[:0]
	for len(c.times) > 0 && c.times[0] <= n {
		t := heap.Pop(&c.times).(int64)
		for _, st := range c.due[t] {
			c.taken = append(c.taken, queuedStore{st, t})
		}
		delete(c.due, t)
	}
	return c.taken
}

// done lets go of what take returned, and sets the timer for what is
// queued now.
func (c *storeClock) done() {
	clear(c.taken)
	c.arm()
}

// arm sets the timer for the earliest time queued, unless it is set for
// that time or earlier already.
func (c *storeClock) arm() {
	if len(c.times) == 0 {
		return
	}
	t := c.times[0]
	if c.armed != 0 && c.armed <= t {
		return
	}
	c.armed = t
	wait := max(0, time.Until(time.Unix(0, t)))
	if c.timer == nil {
		c.timer = time.AfterFunc(wait, c.fire)
		return
	}
	c.timer.Reset(wait)
}

// timeHeap is a min-heap of Unix nanosecond times (container/heap).
type timeHeap []int64

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
