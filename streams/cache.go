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
	// epoch counts sweeps (see sweep); a state records the epoch it was
	// last used in. cold is the most recent of the compacted states, which
	// sit together at the back of order (nil: none), so that a sweep starts
	// where the last one stopped.
	epoch uint32
	cold  *list.Element
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
		c.unlink(last)
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
	st := e.Value.(*convState)
	c.use(e, st)
	return st
}

// use marks the state of e used now and moves it to the front, out of the
// compacted ones if it was one.
func (c *lru) use(e *list.Element, st *convState) {
	st.used = c.epoch
	if st.cold {
		st.cold = false
		c.unlink(e)
	}
	c.order.MoveToFront(e)
}

// unlink keeps cold pointing into the compacted states when e, one of
// them, leaves their place at the back.
func (c *lru) unlink(e *list.Element) {
	if c.cold == e {
		c.cold = e.Next()
	}
}

// sweep starts a new epoch and compacts, from the least recently used on,
// the settled states not used in the last after epochs (see
// conversation.Conversation.Compact). It stops at the first state used
// more recently or not settled, and returns how many it compacted.
func (c *lru) sweep(after uint32) int {
	c.epoch++
	e := c.order.Back()
	if c.cold != nil {
		e = c.cold.Prev()
	}
	n := 0
	for ; e != nil; e = e.Prev() {
		st := e.Value.(*convState)
		if c.epoch-st.used < after || !st.settled() {
			break
		}
		if st.conv != nil {
			st.conv.Compact()
		}
		st.cold, c.cold = true, e
		n++
	}
	return n
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
		old := e.Value.(*convState)
		if old != st {
			c.weigh(-old.size)
			c.weigh(st.size)
			c.let(old, false)
		}
		if old.cold {
			old.cold = false
			c.unlink(e)
		}
		e.Value = st
		c.use(e, st)
		c.evict(st)
		c.report()
		return
	}
	st.used = c.epoch
	c.byID[st.id] = c.order.PushFront(st)
	c.weigh(st.size)
	c.evict(st)
	c.report()
}

// drop forgets id, so that it is rebuilt from JetStream when next needed.
func (c *lru) drop(id string) {
	if e, ok := c.byID[id]; ok {
		c.unlink(e)
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
