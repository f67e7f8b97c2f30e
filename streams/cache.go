package streams

import "container/list"

// lru holds conversation states, dropping the least recently used beyond
// its capacity. It belongs to one lane and is not safe for concurrent use.
type lru struct {
	cap   int
	order *list.List // front: most recent; values are *convState
	byID  map[string]*list.Element
	// release is called with every state the cache lets go of; evicted
	// tells a state dropped for room from one dropped as invalid.
	release func(st *convState, evicted bool)
}

func newLRU(capacity int, release func(st *convState, evicted bool)) *lru {
	return &lru{cap: capacity, order: list.New(), byID: map[string]*list.Element{}, release: release}
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
	if e, ok := c.byID[st.id]; ok {
		if old := e.Value.(*convState); old != st {
			c.let(old, false)
		}
		e.Value = st
		c.order.MoveToFront(e)
		return
	}
	c.byID[st.id] = c.order.PushFront(st)
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		old := last.Value.(*convState)
		delete(c.byID, old.id)
		c.let(old, true)
	}
}

// drop forgets id, so that it is rebuilt from JetStream when next needed.
func (c *lru) drop(id string) {
	if e, ok := c.byID[id]; ok {
		c.order.Remove(e)
		delete(c.byID, id)
		c.let(e.Value.(*convState), false)
	}
}

// dropIf forgets every conversation whose id satisfies drop.
func (c *lru) dropIf(drop func(id string) bool) {
	for id := range c.byID {
		if drop(id) {
			c.drop(id)
		}
	}
}

func (c *lru) len() int { return len(c.byID) }

// each calls fn with every state held, most recent first.
func (c *lru) each(fn func(*convState)) {
	for e := c.order.Front(); e != nil; e = e.Next() {
		fn(e.Value.(*convState))
	}
}
