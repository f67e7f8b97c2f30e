package worker

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// intakeMaxBytes bounds the event bytes one partition's intake holds.
const intakeMaxBytes = 64 << 20

// intake is a first-in first-out queue of fetched events between a
// partition's pull and the lanes, so that the pull does not wait on busy
// lanes: a pull that waited stopped asking for events, and the server
// pins another worker once the pinned client has asked for nothing for
// the pinned TTL, while this one still holds and applies the partition's
// events. The consumer's MaxAckPending bounds how many events it holds,
// and max how many bytes: past max, push waits until the lanes have taken
// half of them (the last resort, as the pin may then lapse).
type intake struct {
	mu     sync.Mutex
	msgs   []fetched
	head   int
	bytes  int // the events' data
	max    int // 0: no bound
	closed bool
	wake   chan struct{} // holds a token while msgs may be non-empty or closed is set
	room   chan struct{} // holds a token once bytes fell to max/2 or below
}

func newIntake(limit int) *intake {
	return &intake{max: limit, wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// fetched is an event as the pull took it, with what it began, if
// anything: a new tenure of the partition.
type fetched struct {
	msg    jetstream.Msg
	tenure tenureStart
	gaps   uint32 // its consumer's count of breaks as of its arrival (gapWatch)
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

// push adds f at the end of the queue, first waiting, while the queue
// holds max bytes or more, until next has taken them down to half. It
// reports whether it waited.
func (q *intake) push(f fetched) (waited bool) {
	q.mu.Lock()
	for q.max > 0 && q.bytes >= q.max {
		waited = true
		q.mu.Unlock()
		<-q.room
		q.mu.Lock()
	}
	q.msgs = append(q.msgs, f)
	q.bytes += f.size()
	q.mu.Unlock()
	q.signal()
	return waited
}

// size is the length of the event's data (0 without an event).
func (f fetched) size() int {
	if f.msg == nil {
		return 0
	}
	return len(f.msg.Data())
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
			if q.bytes -= m.size(); q.max > 0 && q.bytes <= q.max/2 {
				select {
				case q.room <- struct{}{}:
				default:
				}
			}
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
