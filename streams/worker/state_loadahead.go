package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// A lane applies one task at a time. A conversation that is not in its
// cache (a new one, or one the cache let go) is loaded from the store
// first: the stored snapshot's head and the stream's events before the
// one delivered, two round trips to the server for a new conversation,
// more for a rebuild. Loaded on the lane, each held up every other
// conversation of the lane: with every event a new conversation, at 3,000
// a second, events waited behind the loads for a p50 of 71 to 351 ms
// (BENCHMARKS.md). So a lane hands such a load to a goroutine and parks
// the conversation's events, in delivery order, until the loaded state
// comes back to it; meanwhile it goes on with its other conversations.

// parkedLoad is a conversation being loaded off its lane, with the
// deliveries waiting for it in the order they came; the first is the one
// the load is for.
type parkedLoad struct {
	parked []*delivery
}

// loadResult is what a load ahead found for the event it was made for,
// as stateForEvent returns it.
type loadResult struct {
	st   *convState
	skip bool
	err  error
}

// loadAhead parks the deliveries of conversations not in their lane's
// cache and loads those conversations off the lanes, at most as many at
// once as it has slots; it lets a stopping worker wait for the loads.
// loading counts the loads under way, those waiting for a slot included,
// and parked the deliveries waiting for them (the gauges convstream.loads
// and convstream.events.parked).
type loadAhead struct {
	slots           chan struct{}
	mu              sync.Mutex
	closed          bool
	wg              sync.WaitGroup
	loading, parked atomic.Int64

	// What it needs of the worker.
	deps loadDeps
}

// loadDeps is what loadAhead needs of the worker: its conversations'
// loading (Worker.load), the handler and the settling of a delivery
// (Worker.process's work once nothing is to be loaded), the hand-back of
// a delivery of a lost tenure (Worker.handBackStale), the return of a
// delivery to the server, and the lanes.
type loadDeps struct {
	load       func(ctx context.Context, id string, seq uint64) (*convState, bool, error)
	handle     func(ctx context.Context, d *delivery)
	stale      func(m jetstream.Msg) bool
	giveBack   func(m jetstream.Msg)
	do         func(ctx context.Context, l *lane, fn func()) error
	partitions int
	log        *slog.Logger
}

func newLoadAhead(n int, deps loadDeps) *loadAhead {
	return &loadAhead{slots: make(chan struct{}, n), deps: deps}
}

// enter counts a new load, unless the gate is closed.
func (g *loadAhead) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	g.loading.Add(1)
	return true
}

// leave ends a load counted by enter.
func (g *loadAhead) leave() {
	g.loading.Add(-1)
	g.wg.Done()
}

// close lets no new load begin and waits for those under way, each of
// which has handed its result to its lane by then.
func (g *loadAhead) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// process runs d through the handler and settles it, unless its
// conversation must first be loaded: then d waits, parked on the lane,
// for the load (see park). It runs on the lane.
func (g *loadAhead) process(ctx context.Context, l *lane, d *delivery) {
	if g.park(ctx, l, d) {
		return
	}
	g.deps.handle(ctx, d)
}

// park holds d on the lane while its conversation is loaded off it, and
// reports whether it did: when a load of the conversation is under way
// already, or when the lane does not hold the conversation and a load
// begins now. An event that cannot be read, which needs no
// conversation, begins none, nor one whose load is done (d.preload); once
// the worker stops, loads happen on the lane. It runs on the lane.
func (g *loadAhead) park(ctx context.Context, l *lane, d *delivery) bool {
	id := d.conversationID
	if id == "" {
		return false
	}
	if p := l.loads[id]; p != nil {
		p.parked = append(p.parked, d)
		g.parked.Add(1)
		return true
	}
	if d.decodeErr != nil || d.preload != nil || l.cache.Peek(id) != nil || !g.enter() {
		return false
	}
	p := &parkedLoad{parked: []*delivery{d}}
	if l.loads == nil {
		l.loads = make(map[string]*parkedLoad)
	}
	l.loads[id] = p
	g.parked.Add(1)
	go g.load(ctx, l, id, d.seq, p)
	return true
}

// load loads conversation id for its event at sequence seq, off lane l,
// and hands the result back to the lane, where the parked deliveries go
// on (see unpark).
func (g *loadAhead) load(ctx context.Context, l *lane, id string, seq uint64, p *parkedLoad) {
	defer g.leave()
	g.slots <- struct{}{}
	st, skip, err := g.deps.load(ctx, id, seq)
	<-g.slots
	res := &loadResult{st: st, skip: skip, err: err}
	if err := g.deps.do(ctx, l, func() { g.unpark(ctx, l, id, p, res) }); err != nil {
		// Not while the worker runs: it waits for its loads before it
		// closes the lanes. The parked events go unacknowledged, and
		// JetStream redelivers them after the ack wait.
		g.deps.log.ErrorContext(ctx, "loaded conversation not handed back", "conversation", id,
			"events", len(p.parked), "err", err)
	}
}

// unpark runs the deliveries parked for the load p of conversation id,
// in order, now that it returned res: the first, which the load was for,
// with res; the others as they would have run. A delivery of a partition
// this worker lost meanwhile goes back to the server. It does nothing
// when the load was called off (see returnLoads). It runs on the lane.
func (g *loadAhead) unpark(ctx context.Context, l *lane, id string, p *parkedLoad, res *loadResult) {
	if l.loads[id] != p {
		return
	}
	delete(l.loads, id)
	g.parked.Add(-int64(len(p.parked)))
	for i, d := range p.parked {
		if g.deps.stale(d.msg) {
			continue
		}
		if i == 0 {
			d.preload = res
		}
		// A delivery after the first finds the conversation cached, or
		// (when the first failed or was skipped) parks for a new load,
		// behind which those after it park in turn.
		g.process(ctx, l, d)
	}
}

// returnLoads calls off lane l's loads of conversations of partition p
// and hands their parked events back to the server, for the partition's
// next owner (see ownership.handOff). It runs on the lane.
func (g *loadAhead) returnLoads(l *lane, p int) {
	n := g.deps.partitions
	for id, pl := range l.loads {
		if streams.PartitionOf(id, n) != p {
			continue
		}
		for _, d := range pl.parked {
			g.deps.giveBack(d.msg)
		}
		g.parked.Add(-int64(len(pl.parked)))
		delete(l.loads, id)
	}
}
