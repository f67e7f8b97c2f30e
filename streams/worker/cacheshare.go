package worker

import (
	"container/list"
	"math"
	"sync/atomic"
	"time"
)

// cacheShare is the budget the lanes' caches share: how many conversations
// and how many bytes all of them together may hold.
//
// Each lane's cache evicts its own least recently used states, as only its
// lane may touch them. With a fixed share per lane, conversations hashed
// unevenly over the lanes made a lane thrash while others had room: driven
// in turn, 1,000 conversations through eight lanes of 125 each evicted on
// nearly every event (BENCHMARKS.md). So the budget is shared: a lane over
// it lets go of its own least recently used state when that is the oldest
// of all, and otherwise asks the lane holding the oldest to let go of it
// (a trim, queued on that lane), going over the budget by at most slack
// until that lane has run it.
type cacheShare struct {
	maxConvs, maxBytes     int64 // maxBytes 0: none
	slackConvs, slackBytes int64
	convs                  *atomic.Int64 // held now by every cache
	bytes                  atomic.Int64
	born                   time.Time // origin of the caches' clock
	caches                 []*lru
	// post queues fn on the lane of caches[i] without waiting, and reports
	// whether it did; nil: the caches do not ask each other.
	post func(i int, fn func()) bool
}

// newCacheShare returns a budget of conversations and bytes (0: none) for
// caches to share (see add).
func newCacheShare(conversations int, bytes int64) *cacheShare {
	s := &cacheShare{maxConvs: int64(conversations), maxBytes: bytes, convs: new(atomic.Int64), born: time.Now()}
	// A trim is one task away; until it has run, the caches may hold a
	// thirty-second more than the budget (at least one conversation).
	s.slackConvs = max(1, s.maxConvs/32)
	s.slackBytes = s.maxBytes / 32
	return s
}

// add returns a new cache sharing the budget. total receives the cache's
// weight (nil: a counter of its own); release is called with every state
// the cache lets go of.
func (s *cacheShare) add(total *atomic.Int64, release func(st *convState, why letReason)) *lru {
	if total == nil {
		total = new(atomic.Int64)
	}
	c := &lru{share: s, index: len(s.caches), total: total, order: list.New(), byID: map[string]*list.Element{}, release: release}
	c.tailUse.Store(emptyTail)
	s.caches = append(s.caches, c)
	return c
}

// now is the caches' clock: when a state was used, comparable across lanes.
func (s *cacheShare) now() int64 { return int64(time.Since(s.born)) }

// over reports whether the caches hold more than the budget.
func (s *cacheShare) over() bool {
	return s.convs.Load() > s.maxConvs || (s.maxBytes > 0 && s.bytes.Load() > s.maxBytes)
}

// withinSlack reports whether the caches hold no more than the budget plus
// its slack.
func (s *cacheShare) withinSlack() bool {
	return s.convs.Load() <= s.maxConvs+s.slackConvs && (s.maxBytes == 0 || s.bytes.Load() <= s.maxBytes+s.slackBytes)
}

// older returns the cache, other than c, whose least recently used state
// was used before c's, the earliest such one; nil when there is none.
func (s *cacheShare) older(c *lru) *lru {
	var oldest *lru
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
func (s *cacheShare) askTrim(o *lru) bool {
	if s.post == nil {
		return false
	}
	if o.trimQueued.Swap(true) {
		return true
	}
	if !s.post(o.index, func() {
		o.trimQueued.Store(false)
		o.evict(nil)
		o.report()
	}) {
		o.trimQueued.Store(false)
		return false
	}
	return true
}

// emptyTail is the tail time of a cache that holds nothing: it never has
// the oldest state.
const emptyTail = math.MaxInt64
