package streams

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// intake is a first-in first-out queue of fetched events between a
// partition's pull and the lanes. It has no bound of its own (the
// consumer's MaxAckPending bounds what the server hands out), so the pull
// never waits on busy lanes: a pull that waited stopped asking for events,
// and the server pins another worker once the pinned client has asked for
// nothing for the pinned TTL, while this one still holds and applies the
// partition's events.
type intake struct {
	mu     sync.Mutex
	msgs   []fetched
	head   int
	closed bool
	wake   chan struct{} // holds a token while msgs may be non-empty or closed is set
}

func newIntake() *intake {
	return &intake{wake: make(chan struct{}, 1)}
}

// fetched is an event as the pull took it, with what it began, if
// anything: a new tenure of the partition.
type fetched struct {
	msg    jetstream.Msg
	tenure tenureStart
}

// tenureStart tells what the first event under a new pin id begins; zero
// for any other event.
type tenureStart uint8

const (
	// acquiredTenure: the partition is this worker's anew.
	acquiredTenure tenureStart = iota + 1
	// renewedTenure: pinned again under a new id while holding the
	// partition (a new consumer leader does that).
	renewedTenure
)

// push adds m at the end of the queue.
func (q *intake) push(m fetched) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	q.signal()
}

// close marks the end of the queue: next returns what is left, then false.
func (q *intake) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *intake) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next returns the first event of the queue, waiting for one; ok is false
// once the queue is closed and empty.
func (q *intake) next() (m fetched, ok bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.msgs) {
			m = q.msgs[q.head]
			q.msgs[q.head] = fetched{}
			q.head++
			if q.head == len(q.msgs) {
				// Empty: start over at the front of the same array.
				q.msgs, q.head = q.msgs[:0], 0
			} else if q.head >= 1024 && q.head*2 >= len(q.msgs) {
				// Mostly consumed: move what is left to the front.
				n := copy(q.msgs, q.msgs[q.head:])
				clear(q.msgs[n:])
				q.msgs, q.head = q.msgs[:n], 0
			}
			q.mu.Unlock()
			return m, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return fetched{}, false
		}
		<-q.wake
	}
}

// len returns how many events wait in the queue.
func (q *intake) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs) - q.head
}
