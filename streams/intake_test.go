package streams

import (
	"testing"
	"time"
)

// TestIntakeOrder pushes and takes events in steps that make the queue
// move its rest to the front, and requires them in order, then the end
// after close.
func TestIntakeOrder(t *testing.T) {
	q := newIntake()
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
	q := newIntake()
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
