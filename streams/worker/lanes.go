package worker

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/convcache"
)

// lane applies the work of its conversations one task at a time. A
// conversation always maps to the same lane, so its events are applied in
// the order they were delivered, and the lane's cache needs no lock. The
// lane takes the events of its conversations in turns (see laneQueue).
type lane struct {
	queue *laneQueue
	cache *convcache.Cache[*convState]
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
	seed maphash.Seed
	all  []*lane
	wg   sync.WaitGroup
	mu   sync.Mutex // guards close
	// close is set by shutdown; the lanes' queues refuse work from then.
	close bool
	stop  chan struct{} // closed by shutdown: ends sweeping
	// inbox is what the events queued on all the lanes weigh (see
	// eventWeight), against inboxBound; room holds a token once it fell
	// to half the bound or below.
	inbox atomic.Int64
	room  chan struct{}
}

// inboxBound bounds what the events queued on a worker's lanes weigh
// (eventWeight) before the dispatcher waits for the lanes to take half of
// it: the one place a busy conversation can still hold the others back,
// when its backlog alone reaches it. The consumer's MaxAckPending bounds
// the events a worker holds as well.
const inboxBound = 64 << 20

// eventWeight is what an event of size bytes counts for against
// inboxBound: its data and about what the message around it holds.
func eventWeight(size int) int64 { return int64(size) + 512 }

// cacheConfig bounds what the lanes keep: conversations and bytes shared
// among them (0 bytes: no byte limit), after how long unused a
// conversation is compacted (idle) and let go (ttl; 0: never; see
// convcache.Cache.Sweep). total receives the caches' weight and held how
// many conversations they hold; release is called with every state a
// cache lets go of.
type cacheConfig struct {
	conversations int
	bytes         int64
	idle, ttl     time.Duration
	total         *atomic.Int64
	held          *atomic.Int64
	release       func(st *convState, why convcache.Reason)
	// quiet is called on the lane with each state a sweep is about to
	// compact, and may hold it back for a later sweep (see
	// convcache.Cache.Sweep); nil: nothing.
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

// newLanes starts n lanes sharing the cache cfg bounds; try queues a task
// on a lane only while it holds fewer than depth.
func newLanes(n, depth int, cfg cacheConfig) *lanes {
	ls := &lanes{seed: maphash.MakeSeed(), all: make([]*lane, n), stop: make(chan struct{}), room: make(chan struct{}, 1)}
	// Lane i holds the share's cache i: a cache asks another to trim by
	// queuing on that lane.
	share := convcache.NewShare[*convState](convcache.ShareConfig{Values: cfg.conversations, Bytes: cfg.bytes, Held: cfg.held, Post: ls.try})
	for i := range ls.all {
		l := &lane{queue: newLaneQueue(depth), cache: share.Add(convcache.Config[*convState]{Total: cfg.total, Release: cfg.release, Quiet: cfg.quiet})}
		ls.all[i] = l
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			ls.run(l)
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

// run runs what is queued on l until the lanes shut down and l's queue is
// empty.
func (ls *lanes) run(l *lane) {
	for {
		fn, e, ok := l.queue.next()
		if !ok {
			return
		}
		l.taskStart.Store(time.Now().UnixNano())
		fn()
		l.taskStart.Store(0)
		if e.size != 0 {
			if ls.inbox.Add(-int64(e.size)) <= inboxBound/2 {
				select {
				case ls.room <- struct{}{}:
				default:
				}
			}
		}
	}
}

// sweeping queues a sweep on every lane each period until shutdown (see
// convcache.Cache.Sweep for compact and expire). A lane whose queue is
// full skips the sweep: its epoch then lasts longer, which only delays compaction and
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
			ls.try(i, func() { l.cache.Sweep(compact, expire) })
		}
	}
}

// pick returns the lane of a key (a conversation id, or the subject when
// there is no usable id).
func (ls *lanes) pick(key string) *lane {
	return ls.all[maphash.String(ls.seed, key)%uint64(len(ls.all))]
}

// do queues fn on l, behind l's tasks but not behind its events (see
// laneQueue). It fails only when the lanes are closed.
func (ls *lanes) do(_ context.Context, l *lane, fn func()) error {
	if !l.queue.addTask(fn, false, false) {
		return streams.ErrNotReady
	}
	return nil
}

// barrier queues fn on l to run after everything queued on l before it,
// events included, and before everything queued after it. It fails only
// when the lanes are closed.
func (ls *lanes) barrier(l *lane, fn func()) error {
	if !l.queue.addTask(fn, true, false) {
		return streams.ErrNotReady
	}
	return nil
}

// enqueue queues fn, which runs an event of size bytes, on l behind the
// events of the same key (a conversation id, or the subject when there is
// no usable id); fn is told how long the event waited behind them. It waits only while the events queued on all the lanes
// weigh inboxBound or more, and fails when ctx ends first or the lanes are
// closed.
func (ls *lanes) enqueue(ctx context.Context, l *lane, key string, size int, fn func(behind time.Duration)) error {
	weight := eventWeight(size)
	for ls.inbox.Load() >= inboxBound {
		// Polled as well: room holds one token, and dispatchers of several
		// partitions may be waiting.
		select {
		case <-ls.room:
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ls.inbox.Add(weight)
	if !l.queue.addEvent(key, queuedEvent{run: fn, size: int(weight)}) {
		ls.inbox.Add(-weight)
		return streams.ErrNotReady
	}
	return nil
}

// try queues fn on lane i if it has fewer than its depth of tasks queued,
// and reports whether it did (the sweeper and the caches' trims use it).
// It never waits: lanes call it from their tasks.
func (ls *lanes) try(i int, fn func()) bool {
	return ls.all[i].queue.addTask(fn, false, true)
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

// callAll runs fn on every lane at once, as a barrier (after everything
// queued on the lane before it), and waits for them all. When ctx ends
// first, callAll returns its error and fn may still run later.
func (ls *lanes) callAll(ctx context.Context, fn func(l *lane)) error {
	var errs []error
	dones := make([]chan struct{}, 0, len(ls.all))
	for _, l := range ls.all {
		done := make(chan struct{})
		if err := ls.barrier(l, func() { defer close(done); fn(l) }); err != nil {
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
			l.queue.close()
		}
	}
	ls.mu.Unlock()
	ls.wg.Wait()
}
