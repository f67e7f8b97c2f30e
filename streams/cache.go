package streams

import "container/list"

// lru holds conversation states, dropping the least recently used beyond
// its capacity. It belongs to one lane and is not safe for concurrent use.
type lru struct {
	cap   int
	order *list.List // front: most recent; values are *convState
	byID  map[string]*list.Element
}

func newLRU(capacity int) *lru {
	return &lru{cap: capacity, order: list.New(), byID: map[string]*list.Element{}}
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

// put stores st, evicting the least recently used beyond capacity.
func (c *lru) put(st *convState) {
	if e, ok := c.byID[st.id]; ok {
		e.Value = st
		c.order.MoveToFront(e)
		return
	}
	c.byID[st.id] = c.order.PushFront(st)
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*convState).id)
	}
}

// drop forgets id, so that it is rebuilt from JetStream when next needed.
func (c *lru) drop(id string) {
	if e, ok := c.byID[id]; ok {
		c.order.Remove(e)
		delete(c.byID, id)
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
