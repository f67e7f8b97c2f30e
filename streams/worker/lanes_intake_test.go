package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestIntakeOrder pushes and takes events in steps that make the queue
// move its rest to the front, and requires them in order, then the end
// after close.
func TestIntakeOrder(t *testing.T) {
	q := newIntake(0)
	pushed, taken := 0, 0
	push := func(n int) {
		for range n {
			// The tenure field carries the index (mod 256) through the queue.
			q.push(fetched{tenure: tenureStart(pushed % 256)})
			pushed++
		}
	}
	take := func(n int) {
		t.Helper()
		for range n {
			f, ok := q.next()
			if !ok || int(f.tenure) != taken%256 {
				t.Fatalf("event %d came as %d (ok %v)", taken, f.tenure, ok)
			}
			taken++
		}
	}
	push(3000)
	take(2000) // past half of what was pushed: the rest moves to the front
	push(2000)
	take(2500)
	if q.len() != pushed-taken {
		t.Fatalf("len %d, want %d", q.len(), pushed-taken)
	}
	q.close()
	take(pushed - taken)
	if _, ok := q.next(); ok {
		t.Fatal("next after close and empty: ok")
	}
}

// TestIntakeWaits requires next to wait for a push, and to return what is
// left after close before it reports the end.
func TestIntakeWaits(t *testing.T) {
	q := newIntake(0)
	done := make(chan fetched)
	go func() {
		f, _ := q.next()
		done <- f
	}()
	select {
	case <-done:
		t.Fatal("next returned from an empty queue")
	case <-time.After(20 * time.Millisecond):
	}
	q.push(fetched{tenure: acquiredTenure})
	if f := <-done; f.tenure != acquiredTenure {
		t.Fatalf("got tenure %d", f.tenure)
	}
	q.push(fetched{tenure: renewedTenure})
	q.close()
	if f, ok := q.next(); !ok || f.tenure != renewedTenure {
		t.Fatalf("after close: %v %v, want the event left", f.tenure, ok)
	}
	if _, ok := q.next(); ok {
		t.Fatal("next after close and empty: ok")
	}
}

// sizedMsg is an event of n bytes of data, for the intake's byte bound.
type sizedMsg struct {
	jetstream.Msg
	n int
}

func (m sizedMsg) Data() []byte { return make([]byte, m.n) }

// TestIntakeBound fills an intake past its byte bound: the next push
// waits until next has taken the bytes down to half, and says it waited.
func TestIntakeBound(t *testing.T) {
	q := newIntake(100)
	for range 3 {
		if q.push(fetched{msg: sizedMsg{n: 40}}) {
			t.Fatal("a push under the bound waited")
		}
	}
	waited := make(chan bool)
	go func() { waited <- q.push(fetched{msg: sizedMsg{n: 40}}) }()
	take := func() {
		t.Helper()
		if _, ok := q.next(); !ok {
			t.Fatal("next: closed")
		}
	}
	select {
	case <-waited:
		t.Fatal("push at 120 bytes of 100 did not wait")
	case <-time.After(20 * time.Millisecond):
	}
	take() // 80 bytes: over half
	select {
	case <-waited:
		t.Fatal("push went on at 80 bytes of 100")
	case <-time.After(20 * time.Millisecond):
	}
	take() // 40 bytes: room
	if !<-waited {
		t.Fatal("push waited but said it did not")
	}
	if q.len() != 2 {
		t.Fatalf("len %d, want 2", q.len())
	}
}

// len returns how many events wait in the queue.
func (q *intake) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs) - q.head
}
