package convcache

import (
	"math"
	"sync/atomic"
	"time"
)

// Share is the budget the lanes' caches share: how many values and how
// many bytes all of them together may hold.
//
// Each lane's cache evicts its own least recently used values, as only its
// lane may touch them. With a fixed share per lane, conversations hashed
// unevenly over the lanes made a lane thrash while others had room: driven
// in turn, 1,000 conversations through eight lanes of 125 each evicted on
// nearly every event (BENCHMARKS.md). So the budget is shared: a lane over
// it lets go of its own least recently used value when that is the oldest
// of all, and otherwise asks the lane holding the oldest to let go of it
// (a trim, queued on that lane), going over the budget by at most slack
// until that lane has run it.
type Share[V Value] struct {
	maxValues, maxBytes     int64 // maxBytes 0: none
	slackValues, slackBytes int64
	values                  *atomic.Int64 // held now by every cache
	bytes                   atomic.Int64
	born                    time.Time // origin of the caches' clock
	caches                  []*Cache[V]
	post                    func(i int, fn func()) bool
}

// ShareConfig sets a Share's budget and how its caches reach each other.
type ShareConfig struct {
	// Values and Bytes are the budget (Bytes 0: no byte limit).
	Values int
	Bytes  int64
	// Held receives how many values the caches hold (nil: a counter of
	// the share's own).
	Held *atomic.Int64
	// Post queues fn on the lane of the share's cache i (the i-th Add)
	// without waiting, and reports whether it did; nil: the caches do not
	// ask each other to trim.
	Post func(i int, fn func()) bool
}

// NewShare returns a budget for caches to share (see Add).
func NewShare[V Value](cfg ShareConfig) *Share[V] {
	s := &Share[V]{maxValues: int64(cfg.Values), maxBytes: cfg.Bytes, values: cfg.Held, born: time.Now(), post: cfg.Post}
	if s.values == nil {
		s.values = new(atomic.Int64)
	}
	// A trim is one task away; until it has run, the caches may hold a
	// thirty-second more than the budget (at least one value).
	s.slackValues = max(1, s.maxValues/32)
	s.slackBytes = s.maxBytes / 32
	return s
}

// Add returns a new cache sharing the budget, the share's cache i for
// Post, i counting from 0 in the order of Add.
func (s *Share[V]) Add(cfg Config[V]) *Cache[V] {
	total := cfg.Total
	if total == nil {
		total = new(atomic.Int64)
	}
	c := &Cache[V]{share: s, index: len(s.caches), total: total, byID: map[string]*node[V]{}, release: cfg.Release, quiet: cfg.Quiet}
	c.order.init()
	c.tailUse.Store(emptyTail)
	s.caches = append(s.caches, c)
	return c
}

// now is the caches' clock: when a value was used, comparable across lanes.
func (s *Share[V]) now() int64 { return int64(time.Since(s.born)) }

// over reports whether the caches hold more than the budget.
func (s *Share[V]) over() bool {
	return s.values.Load() > s.maxValues || (s.maxBytes > 0 && s.bytes.Load() > s.maxBytes)
}

// withinSlack reports whether the caches hold no more than the budget plus
// its slack.
func (s *Share[V]) withinSlack() bool {
	return s.values.Load() <= s.maxValues+s.slackValues && (s.maxBytes == 0 || s.bytes.Load() <= s.maxBytes+s.slackBytes)
}

// older returns the cache, other than c, whose least recently used value
// was used before c's, the earliest such one; nil when there is none.
func (s *Share[V]) older(c *Cache[V]) *Cache[V] {
	var oldest *Cache[V]
	at := c.tailUse.Load()
	for _, o := range s.caches {
		if o == c {
			continue
		}
		if t := o.tailUse.Load(); t < at {
			oldest, at = o, t
		}
	}
	return oldest
}

// askTrim queues a trim on o unless one is queued already; it reports
// whether o will trim.
func (s *Share[V]) askTrim(o *Cache[V]) bool {
	if s.post == nil {
		return false
	}
	if o.trimQueued.Swap(true) {
		return true
	}
	var none V
	if !s.post(o.index, func() {
		o.trimQueued.Store(false)
		o.evict(none)
		o.report()
	}) {
		o.trimQueued.Store(false)
		return false
	}
	return true
}

// emptyTail is the tail time of a cache that holds nothing: it never has
// the oldest value.
const emptyTail = math.MaxInt64
