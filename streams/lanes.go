package streams

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// lane applies the work of its conversations one task at a time. A
// conversation always maps to the same lane, so its events are applied in
// the order they were delivered, and the lane's cache needs no lock.
type lane struct {
	tasks chan func()
	cache *lru
}

// lanes is a fixed set of lanes.
type lanes struct {
	seed  maphash.Seed
	all   []*lane
	wg    sync.WaitGroup
	mu    sync.RWMutex // guards closed against sends
	close bool
}

// newLanes starts n lanes of depth queued tasks sharing cacheSize cached
// conversations and cacheBytes bytes of them (0: no byte limit), their
// weight kept in total; release is called with every state a cache lets go
// of.
func newLanes(n, depth, cacheSize int, cacheBytes int64, total *atomic.Int64, release func(st *convState, evicted bool)) *lanes {
	ls := &lanes{seed: maphash.MakeSeed(), all: make([]*lane, n)}
	per := max(1, cacheSize/n)
	perBytes := cacheBytes / int64(n)
	for i := range ls.all {
		l := &lane{tasks: make(chan func(), depth), cache: newLRU(per, perBytes, total, release)}
		ls.all[i] = l
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			for t := range l.tasks {
				t()
			}
		}()
	}
	return ls
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

// shutdown lets queued tasks finish and stops the lanes.
func (ls *lanes) shutdown() {
	ls.mu.Lock()
	if !ls.close {
		ls.close = true
		for _, l := range ls.all {
			close(l.tasks)
		}
	}
	ls.mu.Unlock()
	ls.wg.Wait()
}
