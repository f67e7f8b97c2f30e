package streams

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// lane applies the work of its conversations one task at a time. A
// conversation always maps to the same lane, so its events are applied in
// the order they were delivered, and the lane's cache needs no lock.
type lane struct {
	tasks chan func()
	cache *lru
	delta deltaScratch // the message of the lane's deltas (see publish)
	clock storeClock   // the stores queued on the lane (see scheduleStore)
	// loads holds the conversations being loaded off the lane, by id,
	// with the deliveries parked for them (see park).
	loads map[string]*parkedLoad
	// taskStart is when the running task began (Unix nanoseconds), 0
	// while the lane waits for one; lanes.stalled reads it.
	taskStart atomic.Int64
}

// lanes is a fixed set of lanes.
type lanes struct {
	seed  maphash.Seed
	all   []*lane
	wg    sync.WaitGroup
	mu    sync.RWMutex // guards closed against sends
	close bool
	stop  chan struct{} // closed by shutdown: ends sweeping
}

// cacheConfig bounds what the lanes keep: conversations and bytes shared
// among them (0 bytes: no byte limit), after how long unused a
// conversation is compacted (idle) and let go (ttl; 0: never; see
// lru.sweep). total receives the caches' weight and held how many
// conversations they hold; release is called with every state a cache
// lets go of.
type cacheConfig struct {
	conversations int
	bytes         int64
	idle, ttl     time.Duration
	total         *atomic.Int64
	held          *atomic.Int64
	release       func(st *convState, why letReason)
	// quiet is called on the lane with each state a sweep is about to
	// compact, and may hold it back for a later sweep (see lru.sweep);
	// nil: nothing.
	quiet func(st *convState) bool
}

// sweepsPer is how many sweeps fit in the shorter of the idle time and the
// TTL: a conversation unused for d goes after ceil(d/period) + 1 sweeps,
// once it has been unused for between d and d plus a period (at most 1.5 d).
const sweepsPer = 2

// sweepPlan returns how often the lanes sweep their caches and after how
// many sweeps unused a conversation is compacted and let go (0: never);
// a zero period: no sweeps.
func (cfg cacheConfig) sweepPlan() (period time.Duration, compact, expire uint32) {
	shortest := cfg.idle
	if cfg.ttl > 0 && (shortest == 0 || cfg.ttl < shortest) {
		shortest = cfg.ttl
	}
	if shortest <= 0 {
		return 0, 0, 0
	}
	period = max(shortest/sweepsPer, time.Millisecond)
	epochs := func(d time.Duration) uint32 {
		if d <= 0 {
			return 0
		}
		return uint32((d+period-1)/period) + 1
	}
	return period, epochs(cfg.idle), epochs(cfg.ttl)
}

// newLanes starts n lanes of depth queued tasks sharing the cache cfg
// bounds.
func newLanes(n, depth int, cfg cacheConfig) *lanes {
	ls := &lanes{seed: maphash.MakeSeed(), all: make([]*lane, n), stop: make(chan struct{})}
	// Lane i holds the share's cache i: a cache asks another to trim by
	// queuing on that lane.
	share := newCacheShare(cfg.conversations, cfg.bytes)
	share.post = ls.try
	if cfg.held != nil {
		share.convs = cfg.held
	}
	for i := range ls.all {
		l := &lane{tasks: make(chan func(), depth), cache: share.add(cfg.total, cfg.release)}
		l.cache.quiet = cfg.quiet
		ls.all[i] = l
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			for t := range l.tasks {
				l.taskStart.Store(time.Now().UnixNano())
				t()
				l.taskStart.Store(0)
			}
		}()
	}
	if period, compact, expire := cfg.sweepPlan(); period > 0 {
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			ls.sweeping(period, compact, expire)
		}()
	}
	return ls
}

// sweeping queues a sweep on every lane each period until shutdown (see
// lru.sweep for compact and expire). A lane whose queue is full skips the
// sweep: its epoch then lasts longer, which only delays compaction and
// letting go.
func (ls *lanes) sweeping(period time.Duration, compact, expire uint32) {
	t := time.NewTicker(max(period, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-t.C:
		}
		for i, l := range ls.all {
			ls.try(i, func() { l.cache.sweep(compact, expire) })
		}
	}
}

// pick returns the lane of a key (a conversation id, or the subject when
// there is no usable id).
func (ls *lanes) pick(key string) *lane {
	return ls.all[maphash.String(ls.seed, key)%uint64(len(ls.all))]
}

// do queues fn on l. It fails only when ctx ends first or the lanes are
// closed.
func (ls *lanes) do(ctx context.Context, l *lane, fn func()) error {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	if ls.close {
		return ErrNotReady
	}
	select {
	case l.tasks <- fn:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// try queues fn on lane i if its queue has room, without waiting, and
// reports whether it did (the sweeper and the caches' trims use it). Lanes
// call it from their tasks, so it does not wait for mu either: a shutdown
// waiting for mu while a dispatcher holds it, blocked on this lane's full
// queue, would wait for ever.
func (ls *lanes) try(i int, fn func()) bool {
	if !ls.mu.TryRLock() {
		return false
	}
	defer ls.mu.RUnlock()
	if ls.close {
		return false
	}
	select {
	case ls.all[i].tasks <- fn:
		return true
	default:
		return false
	}
}

// call runs fn on l and waits for it. When ctx ends first, call returns
// its error and fn may still run later: the caller must not read what fn
// writes.
func (ls *lanes) call(ctx context.Context, l *lane, fn func()) error {
	done := make(chan struct{})
	if err := ls.do(ctx, l, func() { defer close(done); fn() }); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// callAll runs fn on every lane at once and waits for them all. When ctx
// ends first, callAll returns its error and fn may still run later.
func (ls *lanes) callAll(ctx context.Context, fn func(l *lane)) error {
	var errs []error
	dones := make([]chan struct{}, 0, len(ls.all))
	for _, l := range ls.all {
		done := make(chan struct{})
		if err := ls.do(ctx, l, func() { defer close(done); fn(l) }); err != nil {
			errs = append(errs, err)
			continue
		}
		dones = append(dones, done)
	}
	for _, done := range dones {
		select {
		case <-done:
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
	return errors.Join(errs...)
}

// stalled returns the index of a lane whose running task began more than
// limit ago, and how long ago; -1 when there is none.
func (ls *lanes) stalled(limit time.Duration) (int, time.Duration) {
	now := time.Now().UnixNano()
	for i, l := range ls.all {
		if began := l.taskStart.Load(); began != 0 && time.Duration(now-began) > limit {
			return i, time.Duration(now - began)
		}
	}
	return -1, 0
}

// shutdown lets queued tasks finish and stops the lanes.
func (ls *lanes) shutdown() {
	ls.mu.Lock()
	if !ls.close {
		ls.close = true
		close(ls.stop)
		for _, l := range ls.all {
			close(l.tasks)
		}
	}
	ls.mu.Unlock()
	ls.wg.Wait()
}
