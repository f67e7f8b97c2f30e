package convcache

// Sweep starts a new epoch. It lets go of the settled values not used in
// the last expire epochs (0: none), from the least recently used on, as
// Unused (see expireUnused); then it compacts the settled values not used
// in the last compact epochs (0: none; see Value.Compact). Each pass stops
// at the first value used more recently or not settled, and compaction
// also where the cache's Quiet says to. It returns how many values it
// compacted and how many it let go.
func (c *Cache[V]) Sweep(compact, expire uint32) (compacted, expired int) {
	c.epoch++
	if expire > 0 {
		expired = c.expireUnused(expire)
	}
	if compact == 0 {
		return 0, expired
	}
	n := c.order.back()
	if c.cold != nil {
		n = c.order.prevOf(c.cold)
	}
	for ; n != nil; n = c.order.prevOf(n) {
		if c.epoch-n.used < compact || !n.v.Settled() {
			break
		}
		if c.quiet != nil && !c.quiet(n.v) {
			break
		}
		n.v.Compact()
		c.reweigh(n) // what it let go of no longer counts against the budget
		n.cold, c.cold = true, n
		compacted++
	}
	if compacted > 0 {
		c.report()
	}
	return compacted, expired
}

// ExpireMax is how many values one sweep of a cache lets go for going
// unused at most: in a worker, the release of each may queue a checkpoint
// write, which waits in a queue for a slot; the next sweep goes on.
const ExpireMax = 512

// expireUnused lets go of the settled values not used in the last after
// epochs, from the least recently used on, up to ExpireMax.
func (c *Cache[V]) expireUnused(after uint32) int {
	k := 0
	for n := c.order.back(); n != nil && k < ExpireMax; {
		if c.epoch-n.used < after || !n.v.Settled() {
			break
		}
		prev := c.order.prevOf(n)
		c.let(c.remove(n), Unused)
		k++
		n = prev
	}
	if k > 0 {
		c.noteTail()
		c.report()
	}
	return k
}
