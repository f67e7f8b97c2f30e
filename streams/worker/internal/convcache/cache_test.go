package convcache

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLRU checks that the least recently used value goes when the cache is
// over its budget of values, and that a dropped one is gone.
func TestLRU(t *testing.T) {
	c := newCache(2, 0, Config[*item]{})
	for _, id := range []string{"a", "b"} {
		c.Put(&item{id: id})
	}
	c.Get("a") // b is now the least recently used
	c.Put(&item{id: "c"})
	if c.Get("b") != nil || c.Get("a") == nil || c.Get("c") == nil || c.Len() != 2 {
		t.Errorf("eviction: len %d", c.Len())
	}
	c.Drop("a")
	if c.Get("a") != nil || c.Len() != 1 {
		t.Error("drop")
	}
}

// cold returns the ids of the compacted values c holds, most recent first.
func cold(c *Cache[*item]) string {
	var s []string
	c.Each(func(it *item) {
		if h, _ := c.Held(it.id); h.Compacted {
			s = append(s, it.id)
		}
	})
	return strings.Join(s, "")
}

// TestLRUSweep checks which values a sweep compacts: those unused for the
// given number of sweeps, from the least recently used on, stopping at the
// first one used since or not settled; and that a compacted value used
// again leaves the compacted ones without breaking where the next sweep
// starts.
func TestLRUSweep(t *testing.T) {
	c := newCache(10, 0, Config[*item]{})
	for _, id := range []string{"a", "b", "c", "d"} {
		c.Put(&item{id: id, weight: 100})
	}
	if n, _ := c.Sweep(2, 0); n != 0 {
		t.Fatalf("first sweep compacted %d values, used in the epoch before", n)
	}
	c.Get("b") // order now b d c a; b used in epoch 1
	if n, _ := c.Sweep(2, 0); n != 3 || cold(c) != "dca" {
		t.Fatalf("second sweep: %d compacted, cold %q; want d, c and a", n, cold(c))
	}
	if c.bytes != 100+3*50 || c.total.Load() != c.bytes {
		t.Fatalf("after compacting three of four values of 100 bytes to 50: %d bytes, total %d", c.bytes, c.total.Load())
	}
	c.Get("c") // c b d a, with d and a compacted
	if cold(c) != "da" || c.cold.v.id != "d" {
		t.Fatalf("after c is used: cold %q", cold(c))
	}
	b := c.Peek("b")
	b.busy = true // a store queued: b is not settled
	if n, _ := c.Sweep(2, 0); n != 0 || cold(c) != "da" {
		t.Fatalf("third sweep: %d compacted, cold %q; want none (b is not settled)", n, cold(c))
	}
	b.busy = false
	if n, _ := c.Sweep(2, 0); n != 2 || cold(c) != "cbda" {
		t.Fatalf("fourth sweep: %d compacted, cold %q; want b and c", n, cold(c))
	}
	c.Drop("c") // the most recent compacted value goes
	if c.cold.v.id != "b" {
		t.Fatal("dropping the most recent compacted value lost the others")
	}
	c.Put(&item{id: "b", weight: 100}) // replaced by a fresh value: b d a
	if cold(c) != "da" || c.cold.v.id != "d" {
		t.Fatalf("after b is replaced: cold %q", cold(c))
	}
	c.Drop("d")
	c.Drop("a")
	if c.cold != nil {
		t.Fatal("no compacted value left, yet the next sweep would start inside the list")
	}
	if n, _ := c.Sweep(2, 0); n != 0 {
		t.Fatalf("fifth sweep compacted %d values; b was put in the epoch before", n)
	}
	if n, _ := c.Sweep(2, 0); n != 1 || cold(c) != "b" {
		t.Fatalf("sixth sweep: %d compacted, cold %q; want b", n, cold(c))
	}
}

// TestLRUExpire checks which values a sweep lets go for going unused:
// those unused for the given number of sweeps, from the least recently
// used on, released as Unused; it stops at the first one used since or not
// settled, and the next sweep goes on from there.
func TestLRUExpire(t *testing.T) {
	var total atomic.Int64
	var released []string
	c := newCache(10, 0, Config[*item]{Total: &total, Release: func(it *item, why Reason) {
		if why != Unused {
			t.Errorf("%s let go for reason %d, want unused", it.id, why)
		}
		released = append(released, it.id)
	}})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		c.Put(&item{id: id, weight: 10})
	}
	ids := func() string {
		var s []string
		c.Each(func(it *item) { s = append(s, it.id) })
		return strings.Join(s, "")
	}
	if _, n := c.Sweep(0, 2); n != 0 {
		t.Fatalf("first sweep let %d go, all used in the epoch before", n)
	}
	c.Peek("b").busy = true // a store queued: b is not settled
	if _, n := c.Sweep(0, 2); n != 1 || ids() != "edcb" || !slices.Equal(released, []string{"a"}) {
		t.Fatalf("second sweep let %d go (%v), holds %q: want a, then a stop at b", n, released, ids())
	}
	c.Peek("b").busy = false
	c.Get("d") // order d e c b; d used in epoch 2
	if _, n := c.Sweep(0, 2); n != 3 || ids() != "d" {
		t.Fatalf("third sweep let %d go, holds %q: want b, c and e", n, ids())
	}
	if _, n := c.Sweep(0, 2); n != 1 || ids() != "" {
		t.Fatalf("fourth sweep let %d go, holds %q: want d", n, ids())
	}
	if !slices.Equal(released, []string{"a", "b", "c", "e", "d"}) {
		t.Errorf("released %v, want a, b, c, e, d in that order", released)
	}
	if c.Len() != 0 || c.share.values.Load() != 0 || total.Load() != 0 || c.share.bytes.Load() != 0 {
		t.Errorf("after every value went: %d held, share counts %d and %d bytes, total %d", c.Len(), c.share.values.Load(), c.share.bytes.Load(), total.Load())
	}
	if c.Lets() != 5 {
		t.Errorf("Lets counts %d, want 5", c.Lets())
	}
}

// TestLRUSweepHeldBack checks that a value Quiet holds back ends the
// compacting pass there, and that the next sweep goes on from it.
func TestLRUSweepHeldBack(t *testing.T) {
	var asked []string
	hold := "c"
	c := newCache(10, 0, Config[*item]{Quiet: func(it *item) bool {
		asked = append(asked, it.id)
		return it.id != hold
	}})
	for _, id := range []string{"a", "b", "c", "d"} { // d c b a
		c.Put(&item{id: id})
	}
	if n, _ := c.Sweep(1, 0); n != 2 || cold(c) != "ba" || strings.Join(asked, "") != "abc" {
		t.Fatalf("sweep holding c back: %d compacted, cold %q, asked of %q; want a and b compacted, a, b and c asked of", n, cold(c), asked)
	}
	hold, asked = "", nil
	if n, _ := c.Sweep(1, 0); n != 2 || cold(c) != "dcba" || strings.Join(asked, "") != "cd" {
		t.Fatalf("next sweep: %d compacted, cold %q, asked of %q; want c and d, from where the last stopped", n, cold(c), asked)
	}
}

// TestByteBudget checks that a value growing past the byte budget
// (Resize) evicts the least recently used others, never itself, and that
// a fresh value put under a held key lets the old one go as Invalid.
func TestByteBudget(t *testing.T) {
	var total atomic.Int64
	var released []string
	c := newCache(10, 300, Config[*item]{Total: &total, Release: func(it *item, why Reason) {
		released = append(released, it.id+":"+[]string{"invalid", "room", "unused"}[why])
	}})
	for _, id := range []string{"a", "b", "c"} {
		c.Put(&item{id: id, weight: 100})
	}
	c2 := c.Peek("c")
	c2.weight = 250
	c.Resize(c2)
	if !slices.Equal(released, []string{"a:room", "b:room"}) || total.Load() != 250 {
		t.Fatalf("after c grew to 250 of 300: released %v, total %d; want a and b for room, 250", released, total.Load())
	}
	c2.weight = 400
	c.Resize(c2)
	if c.Len() != 1 || total.Load() != 400 {
		t.Fatalf("c alone over the budget: %d held, total %d; want c kept while in use", c.Len(), total.Load())
	}
	c.Put(&item{id: "c", weight: 10})
	if !slices.Equal(released, []string{"a:room", "b:room", "c:invalid"}) || total.Load() != 10 {
		t.Fatalf("after c was replaced: released %v, total %d", released, total.Load())
	}
	c.Resize(&item{id: "x", weight: 1000}) // not held: left alone
	if total.Load() != 10 || c.Len() != 1 {
		t.Fatalf("resizing a value not held changed the cache: total %d, %d held", total.Load(), c.Len())
	}
}

// TestPutAgainCountsItsWeight: putting a value the cache holds again, after
// it grew without a Resize, counts its new weight, so that the bytes held
// come back to zero when it goes.
func TestPutAgainCountsItsWeight(t *testing.T) {
	var total atomic.Int64
	c := newCache(10, 1000, Config[*item]{Total: &total})
	it := &item{id: "a", weight: 100}
	c.Put(it)
	it.weight = 300
	c.Put(it)
	if c.bytes != 300 || c.share.bytes.Load() != 300 {
		t.Fatalf("after a grew to 300 and was put again: %d bytes, share %d; want 300", c.bytes, c.share.bytes.Load())
	}
	c.Drop("a")
	if c.bytes != 0 || c.share.bytes.Load() != 0 || total.Load() != 0 {
		t.Errorf("after a went: %d bytes, share %d, total %d; want 0", c.bytes, c.share.bytes.Load(), total.Load())
	}
}
