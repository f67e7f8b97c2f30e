package convcache

import (
	"sync/atomic"
)

// Cache holds values, letting go of the least recently used while the
// caches sharing its budget hold more values or bytes than it allows (see
// Share). It belongs to one lane and is not safe for concurrent use, but
// for tailUse and trimQueued.
type Cache[V Value] struct {
	share *Share[V]
	index int     // in share.caches
	order list[V] // front: most recent
	byID  map[string]*node[V]
	// tailUse is when the least recently used value was used (the share's
	// clock; emptyTail when there is none), for other lanes to compare;
	// trimQueued is set while a trim of this cache waits on its lane.
	tailUse    atomic.Int64
	trimQueued atomic.Bool
	// bytes is what the values held weigh (Value.Weight), and total the
	// sum over every lane's cache, losses at once and growth as last
	// reported (see weigh), for metrics and tests.
	bytes    int64
	total    *atomic.Int64
	reported int64 // the part of total that is this cache's bytes
	// release is called with every value the cache lets go of, and why.
	release func(v V, why Reason)
	// quiet is called with each value a sweep is about to compact; false
	// leaves the value as it is and ends the pass there, for the next
	// sweep to go on from.
	quiet func(v V) bool
	// epoch counts sweeps (see Sweep); a node records the epoch its value
	// was last used in. cold is the most recent of the compacted values,
	// which sit together at the back of order (nil: none), so that a sweep
	// starts where the last one stopped.
	epoch uint32
	cold  *node[V]
	// lets counts the values let go of (see Lets).
	lets uint64
}

// Config is what a cache reports to and asks of its owner.
type Config[V Value] struct {
	// Total receives the cache's weight (nil: a counter of its own).
	Total *atomic.Int64
	// Release is called with every value the cache lets go of, and why
	// (nil: nothing).
	Release func(v V, why Reason)
	// Quiet is called with each value a sweep is about to compact, and
	// may hold it back for a later sweep (nil: nothing; see Sweep).
	Quiet func(v V) bool
}

// New returns a cache with a budget of its own: capacity values and
// maxBytes (0: no byte limit).
func New[V Value](capacity int, maxBytes int64, cfg Config[V]) *Cache[V] {
	return NewShare[V](ShareConfig{Values: capacity, Bytes: maxBytes}).Add(cfg)
}

// weigh adds d bytes to the cache's weight. A loss is reported at once,
// growth only by report: another lane stops evicting as soon as this one's
// loss counts in the share, so a reported total that still held the loss
// could show that lane's growth on top of it, over the budget.
func (c *Cache[V]) weigh(d int64) {
	c.bytes += d
	c.share.bytes.Add(d)
	if d < 0 {
		c.total.Add(d)
		c.reported += d
	}
}

// noteTail publishes when the cache's least recently used value was used.
func (c *Cache[V]) noteTail() {
	if n := c.order.back(); n != nil {
		c.tailUse.Store(n.lastUse)
	} else {
		c.tailUse.Store(emptyTail)
	}
}

// report publishes the cache's growth to the shared total once a change
// is complete (evictions included), so that a reader never sees the
// moment between a value's growth and the evictions it causes.
func (c *Cache[V]) report() {
	c.total.Add(c.bytes - c.reported)
	c.reported = c.bytes
}

// Resize takes v's current weight into account (it changed: an event was
// applied) and evicts the least recently used values, never v, while the
// cache is over its byte budget. A value not held is left alone.
func (c *Cache[V]) Resize(v V) {
	n, ok := c.byID[v.Key()]
	if !ok {
		return
	}
	c.reweigh(n)
	c.evict(v)
	c.report()
}

// reweigh counts the value of n at its weight now.
func (c *Cache[V]) reweigh(n *node[V]) {
	w := n.v.Weight()
	c.weigh(w - n.size)
	n.size = w
}

// evict lets go of least recently used values, never keep, while the
// caches are over their budget: this cache's own when they are the oldest
// or the caches are over by more than the slack, otherwise it asks the
// cache holding the oldest to trim.
func (c *Cache[V]) evict(keep V) {
	defer c.noteTail()
	for c.share.over() {
		last := c.order.back()
		mine := last != nil && last.v != keep
		if !mine || c.share.withinSlack() {
			if o := c.share.older(c); o != nil && c.share.askTrim(o) {
				return
			}
		}
		if !mine {
			return // alone over the budget: it stays while in use
		}
		c.let(c.remove(last), ForRoom)
	}
}

// let releases a value let go of.
func (c *Cache[V]) let(v V, why Reason) {
	c.lets++
	if c.release != nil {
		c.release(v, why)
	}
}

// Lets counts the values the cache has let go of, for any reason: a value
// loaded off the lane since the count was last read may be older than one
// let go meanwhile.
func (c *Cache[V]) Lets() uint64 { return c.lets }

// Get returns the value of key and marks it used, or the zero V when the
// cache does not hold it.
func (c *Cache[V]) Get(key string) V {
	n, ok := c.byID[key]
	if !ok {
		var none V
		return none
	}
	c.use(n)
	return n.v
}

// use marks the value of n used now and moves it to the front, out of the
// compacted ones if it was one.
func (c *Cache[V]) use(n *node[V]) {
	n.used = c.epoch
	n.lastUse = c.share.now()
	if n.cold {
		n.cold = false
		c.unlink(n)
	}
	c.order.moveToFront(n)
	c.noteTail()
}

// unlink keeps cold pointing into the compacted values when n, one of
// them, leaves their place at the back.
func (c *Cache[V]) unlink(n *node[V]) {
	if c.cold == n {
		c.cold = c.order.nextOf(n)
	}
}

// Peek returns the value of key without marking it used, or the zero V
// when the cache does not hold it.
func (c *Cache[V]) Peek(key string) V {
	if n, ok := c.byID[key]; ok {
		return n.v
	}
	var none V
	return none
}

// Held reports what the cache knows of the value of key.
func (c *Cache[V]) Held(key string) (Held, bool) {
	n, ok := c.byID[key]
	if !ok {
		return Held{}, false
	}
	return Held{Weight: n.size, Compacted: n.cold}, true
}

// Put stores v, marked used, evicting the least recently used beyond the
// budget. A different value held under its key is let go of as Invalid.
func (c *Cache[V]) Put(v V) {
	size := v.Weight()
	if n, ok := c.byID[v.Key()]; ok {
		old := n.v
		if old != v {
			c.weigh(-n.size)
			c.weigh(size)
			c.let(old, Invalid)
		} else {
			// The same value again, weighing what it weighs now: count
			// the change, or the bytes drift from what is held
			// (TestPutAgainCountsItsWeight).
			c.weigh(size - n.size)
		}
		n.size = size
		if n.cold {
			n.cold = false
			c.unlink(n)
		}
		n.v = v
		c.use(n)
		c.evict(v)
		c.report()
		return
	}
	n := &node[V]{v: v, size: size, used: c.epoch, lastUse: c.share.now()}
	c.order.pushFront(n)
	c.byID[v.Key()] = n
	c.share.values.Add(1)
	c.weigh(size)
	c.evict(v)
	c.report()
}

// Drop forgets key, letting its value go as Invalid.
func (c *Cache[V]) Drop(key string) {
	if n, ok := c.byID[key]; ok {
		v := c.remove(n)
		c.noteTail()
		c.report()
		c.let(v, Invalid)
	}
}

// remove takes the value of n out of the cache and its share's count and
// weight, and returns it.
func (c *Cache[V]) remove(n *node[V]) V {
	c.unlink(n)
	c.order.remove(n)
	delete(c.byID, n.v.Key())
	c.share.values.Add(-1)
	c.weigh(-n.size)
	return n.v
}

// Len returns how many values the cache holds.
func (c *Cache[V]) Len() int { return len(c.byID) }

// Each calls fn with every value held, most recent first.
func (c *Cache[V]) Each(fn func(V)) {
	for n := c.order.front(); n != nil; n = c.order.nextOf(n) {
		fn(n.v)
	}
}

// EachHeld calls fn with every value held and what the cache knows of it,
// most recent first.
func (c *Cache[V]) EachHeld(fn func(V, Held)) {
	for n := c.order.front(); n != nil; n = c.order.nextOf(n) {
		fn(n.v, Held{Weight: n.size, Compacted: n.cold})
	}
}
