package worker

import (
	"container/list"
	"sync/atomic"
)

// lru holds conversation states, dropping the least recently used while
// the caches sharing its budget hold more conversations or bytes than it
// allows (see cacheShare). It belongs to one lane and is not safe for
// concurrent use, but for tailUse and trimQueued.
type lru struct {
	share *cacheShare
	index int        // in share.caches
	order *list.List // front: most recent; values are *convState
	byID  map[string]*list.Element
	// tailUse is when the least recently used state was used (the share's
	// clock; emptyTail when there is none), for other lanes to compare;
	// trimQueued is set while a trim of this cache waits on its lane.
	tailUse    atomic.Int64
	trimQueued atomic.Bool
	// bytes is what the states held weigh (convState.size), and total the
	// sum over every lane's cache, losses at once and growth as last
	// reported (see weigh), for metrics and tests.
	bytes    int64
	total    *atomic.Int64
	reported int64 // the part of total that is this cache's bytes
	// release is called with every state the cache lets go of, and why.
	release func(st *convState, why letReason)
	// quiet is called with each state a sweep is about to compact; false
	// leaves the state as it is and ends the pass there, for the next
	// sweep to go on from.
	quiet func(st *convState) bool
	// epoch counts sweeps (see sweep); a state records the epoch it was
	// last used in. cold is the most recent of the compacted states, which
	// sit together at the back of order (nil: none), so that a sweep starts
	// where the last one stopped.
	epoch uint32
	cold  *list.Element
	// lets counts the states let go of: a state loaded off the lane since
	// the count last read may be older than one let go meanwhile (see
	// Worker.stateForRead).
	lets uint64
}

// newLRU returns a cache with a budget of its own: capacity conversations
// and maxBytes (0: no byte limit).
func newLRU(capacity int, maxBytes int64, total *atomic.Int64, release func(st *convState, why letReason)) *lru {
	return newCacheShare(capacity, maxBytes).add(total, release)
}

// weigh adds d bytes to the cache's weight. A loss is reported at once,
// growth only by report: another lane stops evicting as soon as this one's
// loss counts in the share, so a reported total that still held the loss
// could show that lane's growth on top of it, over the budget.
func (c *lru) weigh(d int64) {
	c.bytes += d
	c.share.bytes.Add(d)
	if d < 0 {
		c.total.Add(d)
		c.reported += d
	}
}

// noteTail publishes when the cache's least recently used state was used.
func (c *lru) noteTail() {
	if e := c.order.Back(); e != nil {
		c.tailUse.Store(e.Value.(*convState).lastUse)
	} else {
		c.tailUse.Store(emptyTail)
	}
}

// report publishes the cache's growth to the shared total once a change
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
	c.reweigh(st)
	c.evict(st)
	c.report()
}

// reweigh counts st, held, at its weight now.
func (c *lru) reweigh(st *convState) {
	n := st.weight()
	c.weigh(n - st.size)
	st.size = n
}

// evict lets go of least recently used states, never keep, while the
// caches are over their budget: this cache's own when they are the oldest
// or the caches are over by more than the slack, otherwise it asks the
// cache holding the oldest to trim.
func (c *lru) evict(keep *convState) {
	defer c.noteTail()
	for c.share.over() {
		last := c.order.Back()
		mine := last != nil && last.Value.(*convState) != keep
		if !mine || c.share.withinSlack() {
			if o := c.share.older(c); o != nil && c.share.askTrim(o) {
				return
			}
		}
		if !mine {
			return // alone over the budget: it stays while in use
		}
		c.let(c.remove(last), letForRoom)
	}
}

// letReason says why a cache lets go of a state.
type letReason uint8

const (
	letInvalid letReason = iota // dropped: rebuilt from JetStream when next needed
	letForRoom                  // evicted for the room of other conversations
	letUnused                   // unused for the TTL (see expireUnused)
)

// let releases a state let go of.
func (c *lru) let(st *convState, why letReason) {
	c.lets++
	if c.release != nil {
		c.release(st, why)
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
	st.lastUse = c.share.now()
	if st.cold {
		st.cold = false
		c.unlink(e)
	}
	c.order.MoveToFront(e)
	c.noteTail()
}

// unlink keeps cold pointing into the compacted states when e, one of
// them, leaves their place at the back.
func (c *lru) unlink(e *list.Element) {
	if c.cold == e {
		c.cold = e.Next()
	}
}

// sweep starts a new epoch. It lets go of the settled states not used in
// the last expire epochs (0: none), from the least recently used on, as
// evicted for room (see expireUnused); then it compacts the
// settled states not used in the last compact epochs (0: none; see
// conversation.Conversation.Compact). Each pass stops at the first state
// used more recently or not settled, and compaction also where quiet says
// to. It returns how many states it compacted and how many it let go.
func (c *lru) sweep(compact, expire uint32) (compacted, expired int) {
	c.epoch++
	if expire > 0 {
		expired = c.expireUnused(expire)
	}
	if compact == 0 {
		return 0, expired
	}
	e := c.order.Back()
	if c.cold != nil {
		e = c.cold.Prev()
	}
	for ; e != nil; e = e.Prev() {
		st := e.Value.(*convState)
		if c.epoch-st.used < compact || !st.settled() {
			break
		}
		if c.quiet != nil && !c.quiet(st) {
			break
		}
		// Settled, so no store is pending on it: its store state goes, and
		// the next event makes a new one.
		st.dropStore()
		if st.conv != nil {
			st.conv.Compact()
		}
		c.reweigh(st) // what it let go of no longer counts against the budget
		st.cold, c.cold = true, e
		compacted++
	}
	if compacted > 0 {
		c.report()
	}
	return compacted, expired
}

// expireMax is how many states one sweep of a cache lets go for going
// unused at most: the release of each may queue a checkpoint write (see
// Worker.release), which waits in a queue for a slot; the next sweep goes
// on.
const expireMax = 512

// expireUnused lets go of the settled states not used in the last after
// epochs, from the least recently used on, up to expireMax.
func (c *lru) expireUnused(after uint32) int {
	n := 0
	for e := c.order.Back(); e != nil && n < expireMax; {
		st := e.Value.(*convState)
		if c.epoch-st.used < after || !st.settled() {
			break
		}
		prev := e.Prev()
		c.let(c.remove(e), letUnused)
		n++
		e = prev
	}
	if n > 0 {
		c.noteTail()
		c.report()
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
			c.let(old, letInvalid)
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
	st.used, st.lastUse = c.epoch, c.share.now()
	c.byID[st.id] = c.order.PushFront(st)
	c.share.convs.Add(1)
	c.weigh(st.size)
	c.evict(st)
	c.report()
}

// drop forgets id, so that it is rebuilt from JetStream when next needed.
func (c *lru) drop(id string) {
	if e, ok := c.byID[id]; ok {
		st := c.remove(e)
		c.noteTail()
		c.report()
		c.let(st, letInvalid)
	}
}

// remove takes the state of e out of the cache and its share's count and
// weight, and returns it.
func (c *lru) remove(e *list.Element) *convState {
	st := e.Value.(*convState)
	c.unlink(e)
	c.order.Remove(e)
	delete(c.byID, st.id)
	c.share.convs.Add(-1)
	c.weigh(-st.size)
	return st
}

func (c *lru) len() int { return len(c.byID) }

// each calls fn with every state held, most recent first.
func (c *lru) each(fn func(*convState)) {
	for e := c.order.Front(); e != nil; e = e.Next() {
		fn(e.Value.(*convState))
	}
}
