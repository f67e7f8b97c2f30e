package convcache

import (
	"slices"
	"sync/atomic"
	"testing"
)

// TestCacheShare checks how two caches share a budget of four values: a
// cache over it asks the one holding the oldest value to trim rather than
// drop its own newer ones, goes over by the slack (one) until the trim has
// run, and drops its own past the slack or when no other cache holds
// anything older.
func TestCacheShare(t *testing.T) {
	var queued []func()
	post := func(_ int, fn func()) bool {
		queued = append(queued, fn)
		return true
	}
	s := NewShare[*item](ShareConfig{Values: 4, Post: func(i int, fn func()) bool { return post(i, fn) }})
	runQueued := func() {
		for len(queued) > 0 {
			fn := queued[0]
			queued = queued[1:]
			fn()
		}
	}
	var evicted []string
	release := func(it *item, why Reason) {
		if why == ForRoom {
			evicted = append(evicted, it.id)
		}
	}
	a, b := s.Add(Config[*item]{Release: release}), s.Add(Config[*item]{Release: release})
	ids := func(c *Cache[*item]) []string {
		var out []string
		c.Each(func(it *item) { out = append(out, it.id) })
		slices.Sort(out)
		return out
	}
	put := func(c *Cache[*item], id string) { c.Put(&item{id: id}) }
	check := func(step string, wantA, wantB, wantEvicted []string, wantQueued int) {
		t.Helper()
		if got := ids(a); !slices.Equal(got, wantA) {
			t.Errorf("%s: cache a holds %v, want %v", step, got, wantA)
		}
		if got := ids(b); !slices.Equal(got, wantB) {
			t.Errorf("%s: cache b holds %v, want %v", step, got, wantB)
		}
		if !slices.Equal(evicted, wantEvicted) {
			t.Errorf("%s: evicted %v, want %v", step, evicted, wantEvicted)
		}
		if len(queued) != wantQueued {
			t.Errorf("%s: %d trims queued, want %d", step, len(queued), wantQueued)
		}
		if n := int64(len(ids(a)) + len(ids(b))); s.values.Load() != n {
			t.Errorf("%s: the share counts %d values, the caches hold %d", step, s.values.Load(), n)
		}
	}

	put(a, "a1")
	put(a, "a2")
	put(b, "b1")
	put(b, "b2")
	check("at the budget", []string{"a1", "a2"}, []string{"b1", "b2"}, nil, 0)

	put(b, "b3")
	check("one over: a asked to trim", []string{"a1", "a2"}, []string{"b1", "b2", "b3"}, nil, 1)
	put(b, "b4")
	check("past the slack: b drops its own", []string{"a1", "a2"}, []string{"b2", "b3", "b4"}, []string{"b1"}, 1)
	runQueued()
	check("a trimmed", []string{"a2"}, []string{"b2", "b3", "b4"}, []string{"b1", "a1"}, 0)
	if a.trimQueued.Load() {
		t.Error("a's trim is still marked queued after it ran")
	}

	a.Get("a2") // now the most recent of all
	put(b, "b5")
	check("a holds nothing older: b drops its own", []string{"a2"}, []string{"b3", "b4", "b5"}, []string{"b1", "a1", "b2"}, 0)

	// b holds the oldest (b3), but a trim cannot be queued (its lane is
	// busy): a drops its own.
	post = func(int, func()) bool { return false }
	put(a, "a3")
	check("no room to ask", []string{"a3"}, []string{"b3", "b4", "b5"}, []string{"b1", "a1", "b2", "a2"}, 0)
}

// TestCacheTotalCountsLossesAtOnce replays, on one goroutine, two lanes
// sharing a byte budget: b is part way through evicting when a grows. a
// sees b's loss in the share and keeps its growth, so the reported total
// must already hold b's loss, or a reader would see both lanes' peaks at
// once, over the budget.
func TestCacheTotalCountsLossesAtOnce(t *testing.T) {
	var total atomic.Int64
	s := NewShare[*item](ShareConfig{Values: 100, Bytes: 300})
	a, b := s.Add(Config[*item]{Total: &total}), s.Add(Config[*item]{Total: &total})
	put := func(c *Cache[*item], id string) { c.Put(&item{id: id, weight: 96}) }
	put(b, "b1")
	put(b, "b2")
	put(a, "a1")
	if total.Load() != 288 {
		t.Fatalf("total %d after three values of 96, want 288", total.Load())
	}
	it := b.remove(b.order.back()) // b evicting, not yet reported
	if it.id != "b1" {
		t.Fatalf("b evicted %s, want b1", it.id)
	}
	put(a, "a2") // within the budget again: a keeps it
	if got, held := total.Load(), s.bytes.Load(); got != held || got > 300 {
		t.Errorf("total %d while the caches hold %d (budget 300)", got, held)
	}
	b.report()
	if total.Load() != 288 {
		t.Errorf("total %d after b reported, want 288", total.Load())
	}
}

// TestShareHeld checks that the share counts the values held in the
// counter it is given, which the worker reports as a gauge.
func TestShareHeld(t *testing.T) {
	var held atomic.Int64
	s := NewShare[*item](ShareConfig{Values: 2, Held: &held})
	a, b := s.Add(Config[*item]{}), s.Add(Config[*item]{})
	a.Put(&item{id: "a"})
	b.Put(&item{id: "b"})
	b.Put(&item{id: "c"}) // over: b drops its own (no Post)
	if held.Load() != 2 || a.Len()+b.Len() != 2 {
		t.Errorf("held %d, caches hold %d; want 2", held.Load(), a.Len()+b.Len())
	}
}
