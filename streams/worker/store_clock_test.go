package worker

import (
	"testing"
	"time"
)

// TestStoreClock: the clock's timer is set for the earliest time queued
// and fires once it is due; take returns what is due, earliest first, and
// leaves the rest, for which done sets the timer again; a state queued
// again for an earlier time is returned at both (runStores stores it at
// the one its store state names).
func TestStoreClock(t *testing.T) {
	fired := make(chan time.Time, 8)
	c := storeClock{fire: func() { fired <- time.Now() }}
	a, b := &convState{id: "a"}, &convState{id: "b"}
	start := time.Now()
	c.add(a, start.Add(300*time.Millisecond))
	c.add(b, start.Add(50*time.Millisecond))
	at := <-fired
	if wait := at.Sub(start); wait < 50*time.Millisecond || wait > 250*time.Millisecond {
		t.Fatalf("fired after %v, want about 50ms", wait)
	}
	got := c.take(at)
	if len(got) != 1 || got[0].st != b {
		t.Fatalf("took %v, want b", got)
	}
	c.done()
	// a again, earlier: the timer moves forward.
	c.add(a, start.Add(100*time.Millisecond))
	at = <-fired
	if wait := at.Sub(start); wait > 250*time.Millisecond {
		t.Fatalf("fired after %v, want about 100ms", wait)
	}
	if got := c.take(at); len(got) != 1 || got[0].st != a || got[0].at != start.Add(100*time.Millisecond).UnixNano() {
		t.Fatalf("took %v, want a at its earlier time", got)
	}
	c.done()
	at = <-fired
	if wait := at.Sub(start); wait < 300*time.Millisecond {
		t.Fatalf("fired after %v, want 300ms", wait)
	}
	if got := c.take(at); len(got) != 1 || got[0].st != a {
		t.Fatalf("took %v, want a at its first time", got)
	}
	c.done()
	if len(c.times) != 0 || len(c.due) != 0 {
		t.Errorf("left queued: %v", c.times)
	}
	select {
	case <-fired:
		t.Error("fired with nothing queued")
	case <-time.After(100 * time.Millisecond):
	}
}
