package worker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// DefaultPinnedTTL is how long a partition stays with a worker that stopped
// asking for its events, unless WithPinnedTTL says otherwise: a killed or
// cut-off worker's partitions are taken over this long after it went
// silent, so it bounds failover with partitions (with DefaultAckWait, see
// docs/operations.md, "Failover"). A worker that stalls for longer (a
// stop-the-world pause, a starved process) loses its partitions and its
// successor applies its unstored events again; its pulls, which renew the
// pin, go on while its lanes are busy.
const DefaultPinnedTTL = 3 * time.Second

// ownerGroup is the priority group every worker pulls partitions in.
const ownerGroup = "owners"

// headerPinID is the header JetStream sets on every message it delivers to
// the pinned client of a consumer.
const headerPinID = "Nats-Pin-Id"

// partitionWindow is how many events one partition's pull buffers.
const partitionWindow = 128

// ownership runs a worker on a partitioned stream. Every partition has a
// durable consumer with the pinned-client priority policy: the server
// delivers its events to one pull client at a time (the pinned one) and
// pins another only when that one has not pulled for the pinned TTL or
// gives the partition up. A worker pulls on the partitions it owns, and,
// while it owns fewer than its fair share (partitions / live workers,
// rounded up), on those it prefers and those left without an owner (see
// rebalance), so that a dead worker's partitions are taken over; a worker
// with more than its share drains and unpins the excess.
type ownership struct {
	w       *Worker
	cons    []jetstream.Consumer
	members *members
	work    context.Context // outlives Run's ctx: started work finishes

	mu      sync.Mutex
	pullers map[int]*puller
	pins    []string // by partition: the pin id of the current tenure, "" when not owned
	// unowned holds when each partition was first seen with no pin (no
	// worker pulling it) since it last had one; only rebalance uses it.
	unowned map[int]time.Time
	// retired holds the pin ids of tenures that ended: an event delivered
	// under one of them, still buffered or queued, belongs to the
	// partition's next owner and is handed back instead of applied.
	retired map[string]time.Time
}

// partitionConsumer is the durable consumer name of a partition.
func (c *config) partitionConsumer(p int) string {
	return c.consumer + "-p" + strconv.Itoa(p)
}

// partitionConsumerConfig is the durable consumer of partition p: one
// worker at a time, the pinned client of its priority group, with at most
// maxAckPending events unacknowledged (see Worker.maxAckPending).
func (c *config) partitionConsumerConfig(p, maxAckPending int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        c.partitionConsumer(p),
		Description:    fmt.Sprintf("convstream worker: partition %d of %d, one worker at a time", p, c.storage.Partitions),
		FilterSubjects: []string{c.subjects.PartitionEvents(p), c.subjects.PartitionChunks(p)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        c.ackWait,
		MaxDeliver:     c.maxDeliver, // then dead-lettered (reports_deadletter.go)
		// As in Run: a dead owner's pending acks must not stall its
		// successor.
		MaxAckPending:  maxAckPending,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{ownerGroup},
		PinnedTTL:      c.pinnedTTL,
	}
}

// runPartitioned is Run on a partitioned stream, once the stream and
// bucket exist.
func (w *Worker) runPartitioned(ctx context.Context) error {
	n := w.partitions()
	cons := make([]jetstream.Consumer, n)
	for p := range n {
		var c jetstream.Consumer
		err := w.untilAvailable(ctx, "partition consumer", func() (err error) {
			c, err = w.createConsumer(ctx, w.stream, w.cfg.partitionConsumerConfig(p, w.maxAckPending(partitionWindow)))
			return err
		})
		if err != nil {
			return fmt.Errorf("worker: consumer %s: %w", w.cfg.partitionConsumer(p), err)
		}
		cons[p] = c
	}
	w.setConsumers(cons)
	var mem *members
	err := w.untilAvailable(ctx, "members bucket", func() (err error) {
		mem, err = joinMembers(ctx, w.js, w.cfg.subjects, w.cfg.storage, w.cfg.pinnedTTL, w.id)
		return err
	})
	if err != nil {
		return err
	}
	w.owned = make(ownedSet, n)
	w.lanes = newLanes(w.cfg.lanes, w.cfg.laneDepth, w.cacheConfig())
	defer w.watchReplies(context.WithoutCancel(ctx))()
	work := context.WithoutCancel(ctx)
	if w.cfg.pipelines != nil {
		if err := w.infer.start(work); err != nil {
			w.lanes.shutdown()
			mem.leave(work)
			return err
		}
	}
	stopErasing, err := w.startErasing(work)
	if err != nil {
		w.infer.stop()
		w.lanes.shutdown()
		mem.leave(work)
		return err
	}
	defer stopErasing()
	o := &ownership{w: w, cons: cons, members: mem, work: work, pullers: map[int]*puller{}, pins: make([]string, n),
		retired: map[string]time.Time{}, unowned: map[int]time.Time{}}
	w.own = o
	w.progress.start(work, w.cfg.ackWait)
	w.ready.Store(true)
	go w.auditSnapshots(ctx) // once, in the background (store_audit.go)
	w.cfg.logger.InfoContext(ctx, "worker consuming", "stream", w.stream.CachedInfo().Config.Name,
		"partitions", n, "consumer", w.cfg.consumer, "lanes", w.cfg.lanes, "inference", w.cfg.pipelines != nil)

	// Workers started together see each other before the first pull: a
	// worker alone in the bucket prefers every partition.
	o.settle(ctx)
	o.balance(ctx)

	// As in a hand-off: the pulls go on (keeping the pins) while their
	// events wait and the lanes finish what they hold and store it; then
	// the pulls stop, the events that waited go back, and only then are
	// the partitions given up, so a successor starts after them.
	o.setModes(holding)
	w.finish(work)
	o.setModes(returning)
	o.stopAll()
	if err := w.nc.FlushTimeout(5 * time.Second); err != nil && !w.nc.IsClosed() {
		w.cfg.logger.WarnContext(work, "flush on shutdown", "err", err)
	}
	o.release(work)
	mem.leave(work)
	w.cfg.logger.InfoContext(work, "worker stopped")
	return nil
}

// settle waits one balance tick after joining, unless ctx ends first.
func (o *ownership) settle(ctx context.Context) {
	t := time.NewTimer(o.tick())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// tick is how often balance runs: an eighth of the pinned TTL, between
// 250ms and 1s.
func (o *ownership) tick() time.Duration {
	return min(max(250*time.Millisecond, o.w.cfg.pinnedTTL/8), time.Second)
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// balance adjusts what the worker pulls, every eighth of the pinned TTL
// (between 250ms and 1s: membership is renewed well within the TTL, and
// partitions handed off are taken up soon), until ctx ends or the
// connection closes.
func (o *ownership) balance(ctx context.Context) {
	t := time.NewTicker(o.tick())
	defer t.Stop()
	for {
		if o.w.nc.IsClosed() || ctx.Err() != nil {
			return
		}
		o.rebalance(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pinCheckTimeout bounds the read of one partition consumer's info in
// rebalance. The consumer's leader answers it, and one on a frozen server
// answers nothing until another is elected: with the API's 5 s for each of
// the consumers it led, one round stalled for 10 s and more, the
// membership went unrenewed past the pinned TTL, and the other workers
// counted this one gone (BenchmarkClusterFaults).
const pinCheckTimeout = time.Second

// rebalance compares what the worker owns with its fair share and starts
// or stops pulls accordingly. Below its share, a worker pulls the
// partitions it prefers (members.preferred) at once, and one no worker
// holds only once it has stayed so for the pinned TTL:
// workers that start together on a backlog each take their share rather
// than the first to pull taking every partition and handing them off
// later, behind the backlog (TestBacklogSpreads). A dead worker's
// partitions become the survivors' preferred ones when its membership
// expires, after the pinned TTL, as its pins lapse.
func (o *ownership) rebalance(ctx context.Context) {
	log := o.w.cfg.logger
	n := len(o.cons)
	// Bounded as the pin checks below are: the members bucket's leader on
	// a frozen server answers nothing until another is elected.
	mctx, cancel := context.WithTimeout(ctx, 2*pinCheckTimeout)
	ids, err := o.members.list(mctx)
	cancel()
	if err != nil {
		log.WarnContext(ctx, "counting workers", "err", err)
	}
	live := len(ids)
	share := (n + live - 1) / live
	o.forgetRetired()
	var owned []int
	for p, c := range o.cons {
		ictx, cancel := context.WithTimeout(ctx, pinCheckTimeout)
		info, err := c.Info(ictx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				log.WarnContext(ctx, "partition consumer info", "partition", p, "err", err)
			}
			if o.w.owned[p].Load() {
				owned = append(owned, p) // keep what we hold while the server is unreachable
			}
			continue
		}
		pinned := ""
		for _, g := range info.PriorityGroups {
			if g.Group == ownerGroup {
				pinned = g.PinnedClientID
			}
		}
		if _, seen := o.unowned[p]; pinned == "" && !seen {
			o.unowned[p] = time.Now()
		} else if pinned != "" {
			delete(o.unowned, p)
		}
		o.mu.Lock()
		held := o.pins[p] != ""
		// No pin at all is not another worker's: a new consumer leader
		// starts without one (or this worker's lapsed), and the pull
		// running here may well be pinned again.
		mine := held && (pinned == o.pins[p] || pinned == "")
		o.mu.Unlock()
		if held && !mine {
			// The server pinned another worker (this one stalled past the
			// pinned TTL, or lost a race for the pin).
			o.lose(p)
			o.stop(p)
		}
		o.w.owned[p].Store(mine)
		if mine {
			owned = append(owned, p)
		}
	}
	for _, p := range owned {
		o.start(p)
	}
	if len(owned) < share {
		// Only the worker that prefers a partition waits on it while
		// another holds it: when the holder's pin lapses (a worker dead or
		// stopped, or a fleet restarted on a backlog) the server pins the
		// first pull waiting, and with every worker waiting one could take
		// them all.
		for p := range n {
			since, unowned := o.unowned[p]
			if o.members.preferred(p, ids) || unowned && time.Since(since) >= o.w.cfg.pinnedTTL {
				o.start(p)
			}
		}
		return
	}
	for p := range n {
		if !o.w.owned[p].Load() {
			o.stop(p)
		}
	}
	// What goes is what other workers prefer.
	slices.SortStableFunc(owned, func(a, b int) int {
		return cmp.Compare(b2i(!o.members.preferred(a, ids)), b2i(!o.members.preferred(b, ids)))
	})
	for _, p := range owned[share:] {
		log.InfoContext(ctx, "giving up a partition", "partition", p, "owned", len(owned), "share", share, "workers", live)
		o.handOff(ctx, p)
	}
}

// handOffTimeout bounds how long a hand-off waits for the lanes to store
// the partition's conversations before it keeps the partition for now.
const handOffTimeout = 15 * time.Second

// handOff gives partition p up cleanly. The pull goes on, renewing the
// pin, but p's events wait in its intake while the lanes apply what they
// hold of p and store every conversation of p (its events acknowledged),
// all at once, and let them go; the events parked for a conversation of p
// still being loaded go back to the server unapplied (see returnLoads).
// Then the pull stops, the events that waited are handed back to the
// server, and p is unpinned: the next owner starts from stored snapshots
// (and the checkpoints written as the conversations were let go), with
// nothing of p applied twice or by two workers at once, however long the
// stores took (a hand-off that stopped pulling first lost the pin when
// they outlasted the pinned TTL, and the next owner applied the unstored
// events again). When a store fails or the lanes take longer than
// handOffTimeout, the worker keeps the partition, its events flow again,
// and it tries at the next rebalance.
func (o *ownership) handOff(ctx context.Context, p int) {
	began := time.Now()
	o.mu.Lock()
	pl := o.pullers[p]
	o.mu.Unlock()
	if pl == nil {
		o.start(p) // owned but not pulled: pull, and hand off next time
		return
	}
	pl.setMode(holding)
	var kept, held atomic.Int32 // the lanes run fn in parallel
	storeCtx, cancel := context.WithTimeout(o.work, handOffTimeout)
	err := o.w.lanes.callAll(storeCtx, func(l *lane) {
		o.w.loads.returnLoads(l, p)
		in := o.states(l, p)
		held.Add(int32(len(in)))
		o.w.snapshots.storeMany(o.work, l, in)
		for _, st := range in {
			if st.unsaved() {
				kept.Add(1)
				continue
			}
			o.w.cp.write(storeCtx, st, true)
			l.cache.Drop(st.id)
		}
	})
	cancel()
	if n := kept.Load(); err == nil && n > 0 {
		err = fmt.Errorf("%d conversations not stored", n)
	}
	if err != nil {
		o.w.cfg.logger.WarnContext(ctx, "handing a partition off: kept for now", "partition", p, "err", err)
		pl.setMode(forwarding)
		return
	}
	pl.setMode(returning)
	o.stop(p)
	// The acknowledgements and the events handed back go out before the
	// partition does.
	if err := o.w.nc.FlushTimeout(5 * time.Second); err != nil {
		o.w.cfg.logger.WarnContext(ctx, "handing a partition off: flush", "partition", p, "err", err)
	}
	o.unpin(ctx, p)
	o.w.partitionMetrics.changed(ctx, partitionHandedOff)
	o.w.cfg.logger.InfoContext(ctx, "partition handed off", "partition", p, "conversations", held.Load(),
		"took", time.Since(began).Round(time.Millisecond))
}

// lose ends this worker's tenure of partition p, which the server gave
// another worker: what it still holds of the partition queued or
// buffered is handed back rather than applied, and its conversations are
// let go once what they applied is stored (see snapshotStore.leave).
func (o *ownership) lose(p int) {
	o.w.cfg.logger.WarnContext(o.work, "partition lost", "partition", p)
	o.w.partitionMetrics.changed(o.work, partitionLost)
	o.retire(p)
	o.leave(o.work, p)
}

// retire ends the current tenure of partition p in this worker's books.
func (o *ownership) retire(p int) {
	o.mu.Lock()
	if o.pins[p] != "" {
		o.retired[o.pins[p]] = time.Now()
	}
	o.pins[p] = ""
	o.mu.Unlock()
	o.w.owned[p].Store(false)
}

// stale reports whether m was delivered under a tenure that has ended.
func (o *ownership) stale(m jetstream.Msg) bool {
	pin := m.Headers().Get(headerPinID)
	if pin == "" {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.retired[pin]
	return ok
}

// forgetRetired drops the pins of tenures that ended long enough ago that
// nothing delivered under them can still be buffered or queued here (it
// would have been redelivered elsewhere after the ack wait).
func (o *ownership) forgetRetired() {
	horizon := time.Now().Add(-max(4*o.w.cfg.ackWait, time.Minute))
	o.mu.Lock()
	defer o.mu.Unlock()
	for pin, at := range o.retired {
		if at.Before(horizon) {
			delete(o.retired, pin)
		}
	}
}

// partitionPullExpiry bounds how long a partition's pull request lasts.
// It stays at 2 s: the unpartitioned consumer's pulls went to 1 s
// (pullExpiry) for the stall of nats.go issue 1622, measured on that
// consumer only, and a pinned consumer's pulls also renew its pin.
const partitionPullExpiry = 2 * time.Second

// start pulls partition p, unless already pulling.
func (o *ownership) start(p int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.pullers[p]; ok {
		return
	}
	// A pull renews the pin: well within the pinned TTL, and no longer
	// than partitionPullExpiry.
	expiry := min(partitionPullExpiry, max(time.Second, o.w.cfg.pinnedTTL/2))
	it, err := o.cons[p].Messages(jetstream.PullMaxMessages(partitionWindow),
		jetstream.PullPriorityGroup(ownerGroup), jetstream.PullExpiry(expiry))
	if err != nil {
		o.w.cfg.logger.WarnContext(o.work, "pulling a partition", "partition", p, "err", err)
		return
	}
	pl := newPuller(it)
	o.pullers[p] = pl
	go o.pull(p, pl)
	go o.forward(p, pl)
}

// stop ends the pull of partition p, handing out what it fetched first.
func (o *ownership) stop(p int) {
	o.mu.Lock()
	pl, ok := o.pullers[p]
	delete(o.pullers, p)
	o.mu.Unlock()
	if !ok {
		return
	}
	pl.stop()
}

// setModes sets what every pull's forward does with its events (see
// forwardMode).
func (o *ownership) setModes(m forwardMode) {
	o.mu.Lock()
	pls := make([]*puller, 0, len(o.pullers))
	for _, pl := range o.pullers {
		pls = append(pls, pl)
	}
	o.mu.Unlock()
	for _, pl := range pls {
		pl.setMode(m)
	}
}

// stopAll ends every pull.
func (o *ownership) stopAll() {
	for p := range o.cons {
		o.stop(p)
	}
}

// unpin gives partition p up at once, so that a waiting worker takes it
// without waiting for the pinned TTL.
func (o *ownership) unpin(ctx context.Context, p int) {
	o.retire(p)
	if err := o.w.stream.UnpinConsumer(ctx, o.w.cfg.partitionConsumer(p), ownerGroup); err != nil {
		o.w.cfg.logger.WarnContext(ctx, "unpinning a partition", "partition", p, "err", err)
	}
}

// release unpins every partition still owned, after a graceful stop.
func (o *ownership) release(ctx context.Context) {
	if o.w.nc.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for p := range o.cons {
		if o.w.owned[p].Load() {
			o.unpin(ctx, p)
		}
	}
}

// states returns the conversations of partition p that lane l holds. It
// runs on the lane.
func (o *ownership) states(l *lane, p int) []*convState {
	n := o.w.partitions()
	var in []*convState
	l.cache.Each(func(st *convState) {
		if streams.PartitionOf(st.id, n) == p {
			in = append(in, st)
		}
	})
	return in
}

// onPartition queues fn, on its lane, with every cached conversation of
// partition p, ahead of anything queued on the lanes after it.
func (o *ownership) onPartition(p int, fn func(l *lane, st *convState)) {
	for _, l := range o.w.lanes.all {
		_ = o.w.lanes.barrier(l, func() {
			for _, st := range o.states(l, p) {
				fn(l, st)
			}
		})
	}
}

// forget drops the cached conversations of partition p from every lane,
// ahead of anything queued after it.
func (o *ownership) forget(p int) {
	o.onPartition(p, func(l *lane, st *convState) { l.cache.Drop(st.id) })
}

// leave lets go of the cached conversations of partition p, on every
// lane, ahead of anything queued after it: at once when they have nothing
// unstored, else once that is stored (see snapshotStore.leave).
func (o *ownership) leave(ctx context.Context, p int) {
	o.onPartition(p, func(l *lane, st *convState) {
		st.leaving = true
		o.w.snapshots.leave(ctx, l, st)
	})
}

// suspect marks the cached conversations of partition p as unverified
// (see convState.unverified) on every lane, ahead of anything queued after
// it.
func (o *ownership) suspect(p int) {
	o.onPartition(p, func(_ *lane, st *convState) { st.unverified = true })
}

// ownedSet says, by partition, whether this worker owns it now: ownership
// sets it, the lanes and the inference server read it. It is empty on an
// unpartitioned stream and before Run.
type ownedSet []atomic.Bool

// owns reports whether this worker owns the partition of a conversation
// (always, on an unpartitioned stream).
func (s ownedSet) owns(id string) bool {
	if len(s) == 0 {
		return true
	}
	return s[streams.PartitionOf(id, len(s))].Load()
}

// list returns the partitions owned, in order; nil when none.
func (s ownedSet) list() []int {
	var out []int
	for p := range s {
		if s[p].Load() {
			out = append(out, p)
		}
	}
	return out
}

// partitions is the events stream's partition count (0: unpartitioned).
func (w *Worker) partitions() int { return w.cfg.storage.Partitions }

// eventSubject is the stored subject of a conversation's events.
func (w *Worker) eventSubject(conversationID string) string {
	return w.cfg.subjects.StoredEvents(conversationID, w.partitions())
}

// OwnedPartitions returns the partitions this worker owns now, in order:
// those it has received events of under its current pin (a partition it
// was given shows once its first event arrives). It returns nil on an
// unpartitioned stream or before Run.
func (w *Worker) OwnedPartitions() []int { return w.owned.list() }
