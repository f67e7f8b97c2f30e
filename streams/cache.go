package streams

import (
	"container/list"
	"sync/atomic"
)

// lru holds conversation states, dropping the least recently used beyond
// its capacity in conversations or in bytes. It belongs to one lane and is
// not safe for concurrent use.
type lru struct {
	cap   int
	order *list.List // front: most recent; values are *convState
	byID  map[string]*list.Element
	// maxBytes is the lane's share of the byte budget (0: none); bytes is
	// what the states held weigh (convState.size), and total the sum over
	// every lane's cache, for metrics and tests.
	maxBytes, bytes int64
	total           *atomic.Int64
	reported        int64 // the part of total that is this cache's bytes
	// release is called with every state the cache lets go of; evicted
	// tells a state dropped for room from one dropped as invalid.
	release func(st *convState, evicted bool)
}

func newLRU(capacity int, maxBytes int64, total *atomic.Int64, release func(st *convState, evicted bool)) *lru {
	if total == nil {
		total = new(atomic.Int64)
	}
	return &lru{cap: capacity, maxBytes: maxBytes, total: total, order: list.New(), byID: map[string]*list.Element{}, release: release}
}

// weigh adds d bytes to the cache's weight.
func (c *lru) weigh(d int64) { c.bytes += d }

// report publishes the cache's weight to the shared total once a change
// is complete (evictions included), so that a reader never sees the
// moment between a state's growth and the evictions it causes.
func (c *lru) report() {
	c.total.Add(c.bytes - c.reported)
	c.reported = c.bytes
}

// resize takes st's current size into account (it changed: an event was
// applied) and evicts the least recently used states, never st, while the
// cache is over its byte budget.
func (c *lru) resize(st *convState) {
	if _, ok := c.byID[st.id]; !ok {
		return
	}
	n := st.weight()
	c.weigh(n - st.size)
	st.size = n
	c.evict(st)
	c.report()
}

// evict lets go of the least recently used states, never keep, while the
// cache is over its capacity or its byte budget.
func (c *lru) evict(keep *convState) {
	for c.order.Len() > c.cap || (c.maxBytes > 0 && c.bytes > c.maxBytes) {
		last := c.order.Back()
		old := last.Value.(*convState)
		if old == keep {
			return // alone over the budget: it stays while in use
		}
		c.order.Remove(last)
		delete(c.byID, old.id)
		c.weigh(-old.size)
		c.let(old, true)
	}
}

// let releases a state let go of.
func (c *lru) let(st *convState, evicted bool) {
	if c.release != nil {
		c.release(st, evicted)
	}
}

// get returns the state of id and marks it used, or nil.
func (c *lru) get(id string) *convState {
	e, ok := c.byID[id]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*convState)
}

// peek returns the state of id without marking it used, or nil.
func (c *lru) peek(id string) *convState {
	if e, ok := c.byID[id]; ok {
		return e.Value.(*convState)
	}
	return nil
}

// put stores st, evicting the least recently used beyond capacity.
func (c *lru) put(st *convState) {
	st.size = st.weight()
	if e, ok := c.byID[st.id]; ok {
		if old := e.Value.(*convState); old != st {
			c.weigh(-old.size)
			c.weigh(st.size)
			c.let(old, false)
		}
		e.Value = st
		c.order.MoveToFront(e)
		c.evict(st)
		c.report()
		return
	}
	c.byID[st.id] = c.order.PushFront(st)
	c.weigh(st.size)
	c.evict(st)
	c.report()
}

// drop forgets id, so that it is rebuilt from JetStream when next needed.
func (c *lru) drop(id string) {
	if e, ok := c.byID[id]; ok {
		c.order.Remove(e)
		delete(c.byID, id)
		st := e.Value.(*convState)
		c.weigh(-st.size)
		c.report()
		c.let(st, false)
	}
}

func (c *lru) len() int { return len(c.byID) }

// each calls fn with every state held, most recent first.
func (c *lru) each(fn func(*convState)) {
	for e := c.order.Front(); e != nil; e = e.Next() {
		fn(e.Value.(*convState))
	}
}
