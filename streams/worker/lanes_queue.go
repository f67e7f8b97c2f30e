package worker

import (
	"sync"
	"time"
)

// A lane used to take everything from one channel, in order: the events
// of its conversations and its tasks (stores, loads handed back, reads).
// A hot or huge conversation filled it, and the dispatcher, waiting to
// hand the next event to that lane, handed nothing to the others: 5,000
// updates to one conversation of 10,000 messages (631 a second) held
// every other conversation back for 7.7 s. So a lane keeps its events by
// conversation and takes them in turns, one event of each conversation
// that has some, and the dispatcher never waits for one lane (see
// inboxBound for the one bound it waits for). A conversation's events
// still run one at a time, in the order they came; a busy conversation
// costs the others of its lane one of its events a turn
// (TestHotConversationDoesNotHoldOthers, BenchmarkFairness).

// laneQueue is what a lane has to run: its tasks, first in first out,
// and its events, by conversation. A barrier is a task that runs after
// every event queued before it and before every event queued after it,
// as everything did on the single channel: a hand-off stores what its
// partition applied, a new tenure forgets what came before it.
type laneQueue struct {
	mu    sync.Mutex
	wake  chan struct{} // holds a token while there may be something to run
	tasks []laneTask
	// convs holds the events queued by conversation key; turns the keys
	// with events, in the order of their turns.
	convs map[string]*convEvents
	turns ring[*convEvents]
	// posted counts the barriers queued so far, ran those run; before
	// counts the events queued under each number of barriers posted, by
	// how many barriers were posted before them.
	posted, ran uint64
	before      map[uint64]int
	events      int
	depth       int // try queues a task only below this many
	closed      bool
	// preferTask alternates tasks and events while there are both.
	preferTask bool
}

// laneTask is a task of a lane; barrier is its number among the lane's
// barriers, 0 for a task that is not one.
type laneTask struct {
	fn      func()
	barrier uint64
}

// convEvents is the events of one conversation key queued on a lane.
type convEvents struct {
	key    string
	events ring[queuedEvent]
}

// queuedEvent is an event queued on a lane: what runs it, told how long
// the event waited behind earlier events of its key; its size against
// inboxBound; how many barriers were posted before it; and when it was
// queued, or, queued behind others of its key, when it came first.
type queuedEvent struct {
	run   func(behind time.Duration)
	size  int
	after uint64
	// queued is when the event was queued; first when it became the first
	// of its key (zero: it was first when queued).
	queued, first time.Time
}

func newLaneQueue(depth int) *laneQueue {
	return &laneQueue{wake: make(chan struct{}, 1), convs: make(map[string]*convEvents), before: make(map[uint64]int), depth: depth}
}

func (q *laneQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// addTask queues fn, as a barrier when barrier is set, unless the queue is
// closed or, with room set, holds depth tasks or more. It reports whether
// it queued fn.
func (q *laneQueue) addTask(fn func(), barrier, room bool) bool {
	q.mu.Lock()
	if q.closed || (room && len(q.tasks) >= q.depth) {
		q.mu.Unlock()
		return false
	}
	t := laneTask{fn: fn}
	if barrier {
		q.posted++
		t.barrier = q.posted
	}
	q.tasks = append(q.tasks, t)
	q.mu.Unlock()
	q.signal()
	return true
}

// addEvent queues e behind the events of key, unless the queue is closed,
// and reports whether it did.
func (q *laneQueue) addEvent(key string, e queuedEvent) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	c := q.convs[key]
	if c == nil {
		c = &convEvents{key: key}
		q.convs[key] = c
		q.turns.push(c)
	}
	e.after = q.posted
	e.queued = time.Now()
	c.events.push(e)
	q.before[e.after]++
	q.events++
	q.mu.Unlock()
	q.signal()
	return true
}

// len returns how many tasks and events are queued.
func (q *laneQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tasks) + q.events
}

// close lets nothing more be queued; next returns what is queued, then
// false.
func (q *laneQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// next waits for the next thing to run and returns it: a task or an
// event (e.size says what it frees of inboxBound). ok is false once the
// queue is closed and empty. Tasks and events alternate while there are
// both; events come one conversation at a time, in turns; a barrier waits
// for the events queued before it, and the events queued after it for
// the barrier.
func (q *laneQueue) next() (fn func(), e queuedEvent, ok bool) {
	var behind time.Duration
	for {
		q.mu.Lock()
		task := len(q.tasks) > 0 && (q.tasks[0].barrier == 0 || q.before[q.ran] == 0)
		event := q.before[q.ran] > 0
		if task && (q.preferTask || !event) {
			t := q.tasks[0]
			q.tasks[0] = laneTask{}
			q.tasks = q.tasks[1:]
			if len(q.tasks) == 0 {
				q.tasks = nil
			}
			if t.barrier != 0 {
				delete(q.before, q.ran)
				q.ran = t.barrier
			}
			q.preferTask = false
			q.mu.Unlock()
			return t.fn, queuedEvent{}, true
		}
		if event {
			e = q.takeEvent()
			q.preferTask = true
			q.mu.Unlock()
			if !e.first.IsZero() {
				behind = e.first.Sub(e.queued)
			}
			return func() { e.run(behind) }, e, true
		}
		done := q.closed && len(q.tasks) == 0 && q.events == 0
		q.mu.Unlock()
		if done {
			return nil, queuedEvent{}, false
		}
		<-q.wake
	}
}

// takeEvent takes the first event of the next conversation in turn whose
// first event may run (no barrier before it is waiting), and puts the
// conversation at the back of the turns when it has more. q holds at
// least one such event; q.mu is held.
func (q *laneQueue) takeEvent() queuedEvent {
	for {
		c := q.turns.pop()
		if c.events.peek().after != q.ran {
			q.turns.push(c) // behind a barrier still to run
			continue
		}
		e := c.events.pop()
		if c.events.len() == 0 {
			delete(q.convs, c.key)
		} else {
			c.events.items[c.events.head].first = time.Now()
			q.turns.push(c)
		}
		q.before[e.after]--
		q.events--
		return e
	}
}

// ring is a first-in first-out queue that reuses its array.
type ring[T any] struct {
	items      []T
	head, size int
}

func (r *ring[T]) len() int { return r.size }

func (r *ring[T]) push(v T) {
	if r.size == len(r.items) {
		grown := make([]T, max(4, 2*len(r.items)))
		for i := range r.size {
			grown[i] = r.items[(r.head+i)%len(r.items)]
		}
		r.items, r.head = grown, 0
	}
	r.items[(r.head+r.size)%len(r.items)] = v
	r.size++
}

// peek returns the first item; the ring is not empty.
func (r *ring[T]) peek() T { return r.items[r.head] }

// pop removes and returns the first item; the ring is not empty.
func (r *ring[T]) pop() T {
	var zero T
	v := r.items[r.head]
	r.items[r.head] = zero
	r.head = (r.head + 1) % len(r.items)
	r.size--
	if r.size == 0 && len(r.items) > 64 {
		r.items, r.head = nil, 0 // a burst's array goes with it
	}
	return v
}
