package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/convcache"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSnapshotInterval is how often, at most, the full snapshot of a
// conversation is written to the snapshot bucket.
const DefaultSnapshotInterval = 50 * time.Millisecond

// storeTimeout bounds one write to the snapshot or checkpoint bucket.
const storeTimeout = 10 * time.Second

// snapshotWriteTimeout bounds the write of a snapshot of n bytes: 2 s, and
// a second more for each MiB, up to storeTimeout. A write sent to a
// bucket's leader that froze gets no answer until it times out, and is
// tried again, on the leader elected meanwhile, only then: with 10 s for
// every write, a frozen server's conversations were stored 14–26 s after
// the freeze (BenchmarkClusterFaults). A write that lands after its time
// out is not lost work: the retry meets a conflict and stores over it
// (storedBehind).
func snapshotWriteTimeout(n int) time.Duration {
	return min(storeTimeout, 2*time.Second+time.Duration(n)*time.Second/(1<<20))
}

// pendingStoresPerSecond is how many events a worker can hold
// unacknowledged while their stores are due, for each second of the
// maximum snapshot interval (see pendingStores).
const pendingStoresPerSecond = 1 << 16

// maxPendingSeconds caps the seconds pendingStores provides for: a
// maximum interval longer than that lowers the throughput bound again.
const maxPendingSeconds = 16

// pendingStores is how many events a worker can hold unacknowledged while
// their stores are due. The events stream delivers at most pendingStores /
// (snapshot interval + store time) events a second to one worker, and the
// interval stretches under load up to its maximum: room in proportion to
// that maximum (65,536 a second of it, counting a part as a whole) keeps
// the bound at about 65,536 events a second when the interval has
// stretched all the way, whatever the maximum. A fixed 65,536 made it
// 13,000 at a 5 s maximum, about what one worker applies at half its peak
// on a 2-core machine (BENCHMARKS.md).
func (s *snapshotStore) pendingStores() int {
	longest := max(s.maxInterval, s.interval) // a maximum below the interval fixes it
	secs := (longest + time.Second - 1) / time.Second
	return pendingStoresPerSecond * int(min(max(secs, 1), maxPendingSeconds))
}

// maxAckPending is the consumer's MaxAckPending for a fetch window: what
// the lanes hold, plus the events awaiting a store (acknowledged only once
// a store covers them), with room for a crashed predecessor's.
func (w *Worker) maxAckPending(window int) int {
	return max(4096, 8*(w.cfg.lanes*w.cfg.laneDepth+window)) + w.snapshots.pendingStores()
}

// storeBatch is one write of a conversation's snapshot: the version and
// sequence it stores and the events it covers (bytes: their size),
// acknowledged once it is written. done is closed when the write returned,
// with rev or err set.
type storeBatch struct {
	version, seq uint64
	msgs         []pendingAck
	bytes        int
	done         chan struct{}
	rev          uint64
	err          error
	// checkpoint, when set, is the state's checkpoint at seq, written once
	// the snapshot is (see checkpointBusyEvents).
	checkpoint *checkpointOf
}

// storeAmplification bounds what snapshot writes cost against the events
// they store: a conversation's snapshot is written at the snapshot interval
// once its events since the last write add up to 1/storeAmplification of
// its size (storeFloor at least, while it is busy), and otherwise waits
// for the maximum interval. One of thousands of messages, whose every
// snapshot is megabytes, is thus written about once a maximum interval
// however fast its events come.
const storeAmplification = 4

// storeFloor is the least a snapshot write counts for in the
// storeAmplification rule while its conversation is busy (written less
// than a maximum interval ago). Without it a conversation of a few
// messages was written after nearly every event: 4,000 to 9,000 writes a
// second at 10,000 events a second over 1,000 conversations. At 16 KiB
// (seven 600-byte events make a quarter) a debug count still found about
// 2,000 a second. At 64 KiB a conversation getting 10 events a second is
// written once a maximum interval unless its events add up to 16 KiB
// first; that cut the worker process's CPU in each of ten alternating
// pairs at 8,000 and 10,000 events a second (by 1 to 12%, about 5% on
// average; BENCHMARKS.md). The bucket is behind the deltas by at most a
// maximum interval either way. A conversation written longer ago than
// that (idle, then an event) is written at the interval, whatever its
// size.
//
// A partitioned worker does without it: a partition's pin can move
// between live workers without a hand-off (a consumer leader that changes
// pins again), and what the old owner has not stored by then may be
// redelivered to the new one and applied twice. With a second of events
// unstored instead of 50 ms, TestClusterFailover once saw that (a node
// stopped right after a round of events); this is the likely path, not a
// reproduced one.
const storeFloor = 64 << 10

// deferAck holds the acknowledgement of a delivery whose delta was
// published until a store covers it, and makes sure one is due. It runs on
// the lane.
func (s *snapshotStore) deferAck(ctx context.Context, d *delivery) {
	st := d.state
	q := st.store
	if q == nil {
		// Made here for every event awaiting a store, applied or skipped
		// as redelivered: the cache counts the state with it from now on.
		q = st.storeQueue()
		s.hooks.resize(d.lane, st)
	}
	q.unstored = append(q.unstored, pendingAckOf(d.msg))
	st.unstoredBytes = clamp32(int(st.unstoredBytes) + d.size)
	s.scheduleStore(ctx, d.lane, st)
}

// scheduleStore queues a store of st on its lane's clock for when it is
// due (see storeDue), unless one is being written (its completion
// schedules the next) or one is queued for that time or earlier; a queued
// one due later is moved forward. It runs on the lane.
func (s *snapshotStore) scheduleStore(ctx context.Context, l *lane, st *convState) {
	q := st.store
	if !q.startable() {
		return
	}
	at := roundUp(s.storeDue(st), s.interval/2)
	if st.storing && !at.Before(time.Unix(0, st.storeAt)) {
		return
	}
	st.storing, st.storeAt = true, at.UnixNano()
	if l.clock.fire == nil {
		// ctx is the work context of every caller, which outlives Run's and
		// is never cancelled (see Run): the lane's clock keeps the first.
		l.clock.fire = func() {
			// Refused only once the lanes are shut down, after the final store.
			_ = s.hooks.onLane(ctx, l, func() { s.runStores(ctx, l) })
		}
	}
	l.clock.add(st, at)
}

// runStores stores the states queued on l's clock that are due, each
// when it is still queued for the time it was taken at. It runs on the
// lane.
func (s *snapshotStore) runStores(ctx context.Context, l *lane) {
	for _, q := range l.clock.take(time.Now()) {
		if q.st.storing && q.st.store != nil && q.st.storeAt == q.at {
			s.store(ctx, l, q.st)
		}
	}
	l.clock.done()
}

// storeDue is when the next store of st is due: at the retry time of a
// failed write; for a state loaded now, within the interval (a random part
// of it, so that conversations loaded together, a restart or a burst of
// new ones, do not store together ever after); otherwise the interval
// after the last write, stretched under load (storeInterval), or the
// maximum when its events since then are small against its snapshot
// (storeAmplification, storeFloor). st has a store state.
func (s *snapshotStore) storeDue(st *convState) time.Time {
	if st.retryAt != 0 {
		return time.Unix(0, st.retryAt)
	}
	interval := s.storeInterval()
	if st.lastStore == 0 {
		if interval <= 0 {
			return time.Now()
		}
		return time.Now().Add(rand.N(interval))
	}
	size := int(st.snapshotBytes)
	if size == 0 {
		size = 2 * int(st.flatBytes) // the flat list and the context tree
	}
	last := time.Unix(0, st.lastStore)
	if !s.partitioned && time.Since(last) < s.maxInterval {
		size = max(size, storeFloor)
	}
	if int(st.unstoredBytes)*storeAmplification < size {
		interval = max(interval, s.maxInterval)
	}
	base := s.interval
	if interval <= base {
		return last.Add(interval)
	}
	// A longer interval is a period in which each conversation has its own
	// slot (st.phase): conversations that grew or fell behind together
	// (a load generator's, a burst) would otherwise keep writing their
	// snapshots in the same instant, a burst every period that holds up
	// every event behind it. The store comes at the first slot at least
	// the base interval after the last: once a period when it stays due.
	return nextSlot(last.Add(base), interval, st.phase)
}

// roundUp returns t rounded up to a multiple of grain since the Unix epoch
// (t itself when grain is not positive). scheduleStore rounds every due
// time up to half the snapshot interval, so that the stores of different
// conversations due within that grain go out together: their timers fire
// in one pass, their writes share the connection's flushes and the
// server's reads, and the acknowledgements of the events they cover leave
// together. At 1,000 events a second over 1,000 conversations (about a
// store per event) the worker process's CPU fell by 8 to 10% in three
// alternating pairs, and by 2 to 5% at 5,000 and 10,000 (two pairs each;
// BENCHMARKS.md). A store is never earlier than due, so the interval
// between two stores of a conversation still holds.
func roundUp(t time.Time, grain time.Duration) time.Time {
	if grain <= 0 {
		return t
	}
	g := int64(grain)
	n := t.UnixNano()
	if r := n % g; r != 0 {
		n += g - r
	}
	return time.Unix(0, n)
}

// nextSlot returns the first time at or after t that is phase (a fraction
// of 2^32) of period past a multiple of period since the Unix epoch.
func nextSlot(t time.Time, period time.Duration, phase uint32) time.Time {
	p := int64(period)
	offset := int64(uint64(p) * uint64(phase) >> 32)
	n := t.UnixNano()
	slot := (n-offset)/p*p + offset
	if slot < n {
		slot += p
	}
	return time.Unix(0, slot)
}

// store encodes the full snapshot of st's current version, when the lane
// still holds it, and writes it to the bucket in the background; the write's
// completion runs on the lane (stored). It runs on the lane.
func (s *snapshotStore) store(ctx context.Context, l *lane, st *convState) {
	st.storing = false
	if !st.store.startable() || !s.hooks.holds(l, st) {
		return
	}
	b, value, err := s.beginStore(st)
	if err != nil {
		b.err = err
		close(b.done)
		s.stored(ctx, l, st, b)
		return
	}
	s.writing.Add(1)
	s.writeStore(ctx, st, b, value, func() {
		s.writing.Add(-1)
		// Refused once the lanes are shut down: storeAll has taken it.
		_ = s.hooks.onLane(ctx, l, func() { s.stored(ctx, l, st, b) })
	})
}

// writeStore writes value, the snapshot b stores of st, on the writers:
// b.rev and b.err are set and b.done closed once the write returned, then
// after runs, when set. It is called on the lane (st.rev is read there).
func (s *snapshotStore) writeStore(ctx context.Context, st *convState, b *storeBatch, value []byte, after func()) {
	rev := st.rev
	s.writers.run(func() {
		b.rev, b.err = s.writeSnapshot(ctx, st.id, value, rev)
		s.reuseSnapshotBuffer(value) // the write copied it
		close(b.done)
		if after != nil {
			after()
		}
	})
}

// beginStore encodes the snapshot of st and moves its unstored events into
// a new in-flight batch. st has a store state.
func (s *snapshotStore) beginStore(st *convState) (*storeBatch, []byte, error) {
	q := st.store
	b := &storeBatch{version: st.version, seq: st.seq, msgs: q.unstored, bytes: int(st.unstoredBytes), done: make(chan struct{})}
	q.unstored, q.inflight = nil, b
	st.unstoredBytes, st.retryAt = 0, 0
	tree, err := st.conv.ContextTree()
	if err != nil {
		return b, nil, fmt.Errorf("%w: %w", errUnbuildable, err)
	}
	value, err := encodeSnapshotOf(s.snapshotBuffer(), st.id, st.version, st.seq, liveEntries(st, st.flatJSON.entries(st.flat, 0)), tree)
	if err != nil {
		return b, nil, fmt.Errorf("%w: %w", errUnencodable, err)
	}
	st.snapshotBytes = clamp32(len(value))
	if limit := s.snapshotLimit(st.id); len(value) > limit {
		return b, nil, streams.Reject(streams.CodeSnapshotTooLarge, "the snapshot would be %d bytes, over the limit of %d", len(value), limit)
	}
	if s.hooks.checkpointDue(st) {
		b.checkpoint = capture(st)
	}
	return b, value, nil
}

// writeSnapshot writes a snapshot with a compare-and-set on the key's
// revision (0: the key must not exist) and returns the new revision.
func (s *snapshotStore) writeSnapshot(ctx context.Context, id string, value []byte, rev uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotWriteTimeout(len(value)))
	defer cancel()
	var err error
	if rev == 0 {
		rev, err = s.kv.Create(ctx, id, value)
	} else {
		rev, err = s.kv.Update(ctx, id, value, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, fmt.Errorf("%w: %s: %w", errConflict, id, err)
	}
	if err != nil {
		return 0, fmt.Errorf("worker: store snapshot: %w", err)
	}
	return rev, nil
}

// stored completes a write: the events it covers are acknowledged and the
// next store is scheduled; a failure lets the state go, which asks for its
// events again. It runs on the lane, once per batch; l is nil when the
// lane is letting st go already.
func (s *snapshotStore) stored(ctx context.Context, l *lane, st *convState, b *storeBatch) {
	q := st.store
	if q.batch() != b {
		return
	}
	q.inflight = nil
	o := writeOutcomeOf(b.err)
	s.metrics.snapshotWritten(ctx, o, int(st.snapshotBytes), b.bytes)
	switch o {
	case writeStored:
		s.health.succeeded()
	case writeFailed:
		s.health.failed(b.err, time.Now())
	}
	switch {
	case o == writeStored:
		st.rev, st.storedVersion, st.storedSeq, st.lastStore = b.rev, b.version, b.seq, time.Now().UnixNano()
		st.failures = 0
		s.hooks.ack(ctx, b.msgs)
		s.degraded.stored(st.id, b.seq)
		if b.checkpoint != nil {
			s.hooks.checkpointStored(ctx, st, b.checkpoint)
		}
	case o == writeTooLarge || o == writeRefused:
		// No retry stores this snapshot: its events are applied again,
		// measured, or terminated (store_refusal.go).
		s.refuseStore(ctx, l, st, b)
		return
	case o == writeConflict && s.hooks.holds(l, st) && s.storedBehind(ctx, st, b):
		// Another writer stored an older point of the same history (a
		// worker that lost this partition, finishing what it held): this
		// state includes it, so it is written over at the new revision.
		s.logger.InfoContext(ctx, "snapshot was written by another worker; storing over it",
			"conversation", st.id, "version", b.version, "revision", st.rev)
		s.storeAgain(ctx, l, st, b, time.Now())
		return
	case o == writeFailed && s.hooks.holds(l, st) &&
		!(st.leaving && st.failures >= leavingRetries):
		// The server is away or slow: the state in memory is right, so keep
		// it and its events (unacknowledged) and try the store again later.
		// Letting it go would rebuild it from an older point and publish
		// its events' versions a second time.
		if st.failures < math.MaxUint8 {
			st.failures++
		}
		// From 100 ms whatever the interval (0 stores at once), doubling
		// to 5 s: a full store was tried ten times a second for each
		// conversation (TestFullStoreKeepsWorkerUp). To 1 s while the
		// bucket answers nothing (a leader elected after its server
		// froze): at 5 s, the stores went out seconds after the new
		// leader was there (BenchmarkClusterFaults).
		ceiling := 5 * time.Second
		if unanswered(b.err) {
			ceiling = time.Second
		}
		delay := min(max(s.interval, 100*time.Millisecond)<<min(st.failures-1, 10), ceiling)
		s.logger.WarnContext(ctx, "snapshot not stored; will retry", "conversation", st.id,
			"version", b.version, "retry_in", delay, "err", b.err)
		s.storeAgain(ctx, l, st, b, time.Now().Add(delay))
		return
	default:
		s.logger.WarnContext(ctx, "snapshot not stored; its events will be redelivered",
			"conversation", st.id, "version", b.version, "err", b.err)
		s.hooks.nak(b.msgs)
		if s.hooks.holds(l, st) {
			s.hooks.drop(l, st) // which asks for the unstored events again
		} else {
			s.hooks.nak(q.unstored)
			q.unstored, st.unstoredBytes = nil, 0
		}
		return
	}
	if s.hooks.holds(l, st) {
		if st.leaving {
			s.leave(ctx, l, st)
			return
		}
		s.scheduleStore(ctx, l, st)
		if st.settled() {
			// Nothing pending: the conversation at rest holds no store
			// state, and its next event makes a new one.
			st.dropStore()
			s.hooks.resize(l, st)
		}
	}
}

// writeOutcomeOf classifies the error of a snapshot write.
func writeOutcomeOf(err error) writeOutcome {
	switch {
	case err == nil:
		return writeStored
	case tooLarge(err):
		return writeTooLarge
	case storeRefusal(err) != nil:
		return writeRefused
	case errors.Is(err, errConflict):
		return writeConflict
	}
	return writeFailed
}

// storeAgain puts the events of a write that did not take back in front of
// st's unstored ones and schedules a store of them all at retryAt. It runs
// on the lane.
func (s *snapshotStore) storeAgain(ctx context.Context, l *lane, st *convState, b *storeBatch, retryAt time.Time) {
	q := st.store
	q.unstored = append(b.msgs, q.unstored...)
	st.unstoredBytes = clamp32(int(st.unstoredBytes) + b.bytes)
	st.retryAt = retryAt.UnixNano()
	s.scheduleStore(ctx, l, st)
}

// leavingRetries is how many failed writes in a row a leaving state
// tries before it lets its events go back to the stream (to the
// partition's new owner, which applies them again).
const leavingRetries = 4

// leave lets go of st, a state of a partition this worker lost, once its
// events are stored (and its checkpoint written, when due): it starts the
// write now when one is due, and lets go when nothing is left to store.
// It runs on the lane, again on the completion of each write.
func (s *snapshotStore) leave(ctx context.Context, l *lane, st *convState) {
	switch {
	case !st.unsaved():
		s.hooks.checkpointLeft(ctx, st)
		s.hooks.drop(l, st)
	case st.store.batch() == nil:
		s.store(ctx, l, st) // now, not at the end of the interval
	}
	// Otherwise a write is in flight: its completion comes back here.
}

// storeWave bounds the writes storeMany has in flight at once.
const storeWave = 64

// storeMany stores the states of lane l that have events not stored yet
// and waits for them: the writes in flight complete, then what is left is
// written, up to storeWave writes at once, until a whole wave fails as
// writes do while the bucket is away. l is nil when the lane is letting
// the states go already (see stored). It runs on the lane, which it
// holds for about one write's time rather than one per conversation: a
// hand-off or a stop that wrote one conversation after another held the
// lanes (and, through them, every pull) for seconds, past the pinned TTL,
// and the partitions went to another worker before their events were
// stored.
func (s *snapshotStore) storeMany(ctx context.Context, l *lane, states []*convState) {
	for _, st := range states {
		if b := st.store.batch(); b != nil {
			<-b.done
			s.stored(ctx, l, st, b)
		}
	}
	type write struct {
		st *convState
		b  *storeBatch
	}
	wave := make([]write, 0, min(len(states), storeWave))
	away := false // a whole wave failed as the bucket does when it is away
	complete := func() {
		failed := 0
		for _, wr := range wave {
			<-wr.b.done
			if writeOutcomeOf(wr.b.err) == writeFailed {
				failed++
			}
			s.stored(ctx, l, wr.st, wr.b)
		}
		away = away || (len(wave) > 0 && failed == len(wave))
		wave = wave[:0]
	}
	for _, st := range states {
		if away {
			// The rest would wait as long, wave after wave, holding the
			// lane: they stay unstored (a hand-off keeps the partition,
			// a stop leaves their events to be redelivered).
			return
		}
		if !st.store.startable() {
			continue
		}
		b, value, err := s.beginStore(st)
		if err != nil {
			b.err = err
			close(b.done)
		} else {
			s.writeStore(ctx, st, b, value, nil)
		}
		if wave = append(wave, write{st, b}); len(wave) == storeWave {
			complete()
		}
	}
	complete()
}

// release is called on the lane with every state the lane lets go of. A
// state evicted for room or gone unused is counted, stored first when it
// has events not stored (it is sound), then checkpointed when that is due:
// for room when a write slot is free, as room is needed under load; gone
// unused unless the queue of writes waiting for a slot is full, so that
// its next rebuild starts there. One dropped as invalid asks for its
// events again, soon, so that a rebuild applies and stores them (a write
// in flight completes on its own).
func (w *Worker) release(st *convState, why convcache.Reason) {
	if why != convcache.Invalid {
		ctx := context.Background()
		w.metrics.evicted(ctx, why)
		if st.unsaved() {
			w.snapshots.storeMany(ctx, nil, []*convState{st})
		}
		if why == convcache.Unused {
			w.cp.leaving(ctx, st)
		} else {
			w.cp.write(ctx, st, false)
		}
		return
	}
	if q := st.store; q != nil {
		w.nakAll(q.unstored)
		q.unstored = nil
	}
}

// storeAll stores, on every lane, each conversation with events not stored
// yet, and waits for the writes: the last step of a graceful stop, after
// the lanes ran what was fetched.
func (w *Worker) storeAll(ctx context.Context) {
	err := w.lanes.callAll(ctx, func(l *lane) {
		var due []*convState
		l.cache.Each(func(st *convState) {
			if st.unsaved() {
				due = append(due, st)
			}
		})
		w.snapshots.storeMany(ctx, l, due)
	})
	if err != nil {
		w.cfg.logger.WarnContext(ctx, "storing snapshots on stop", "err", err)
	}
}

// tooLarge reports whether a store failed because the snapshot is over the
// size limit, which no retry changes.
func tooLarge(err error) bool {
	re := storeRefusal(err)
	return re != nil && re.Code == streams.CodeSnapshotTooLarge
}

// unanswered reports whether a write failed for want of an answer (a
// timeout, no responder, no response from the stream): the bucket's leader
// is away and another is being elected, not refusing the write.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// storedBehind reports whether the stored snapshot that made a write of st fail
// its compare-and-set is at or before the batch's sequence (versions are
// event sequences, so the state in memory includes it), and takes its
// revision for the next write. The head is the leader's (storeHooks'
// readHead): read from it, or confirmed by it (read.Confirmed), even from a
// bucket of one replica, whose mirrors may answer its direct gets.
func (s *snapshotStore) storedBehind(ctx context.Context, st *convState, b *storeBatch) bool {
	head, rev, err := s.hooks.readHead(ctx, st.id)
	if err != nil || head.Sequence > b.seq {
		return false
	}
	st.rev = rev
	return true
}

// storeTarget is how many snapshot writes in flight a worker aims for:
// beyond it the bucket is falling behind (its writes take longer, or come
// faster than it takes them) and the interval stretches.
const storeTarget = 32

// lagTarget is how far behind the events stream a worker may fall (the
// time from an event being stored to its delta, smoothed) before the
// snapshot interval stretches.
const lagTarget = 10 * time.Millisecond

// storeInterval is the interval before a conversation's next store: the
// configured one while the worker keeps up, stretched in proportion to how
// far it falls behind — writes in flight beyond storeTarget, or events
// applied later than lagTarget after they were stored — up to the maximum
// (WithSnapshotMaxInterval). Writing each conversation less often under
// load is what keeps the bucket from taking the worker's throughput: a
// snapshot is O(conversation), a delta O(change).
func (s *snapshotStore) storeInterval() time.Duration {
	base := s.interval
	limit := s.maxInterval
	if limit <= base {
		return base
	}
	factor := max(float64(s.writing.Load())/storeTarget, float64(s.lag.Load())/float64(lagTarget))
	if factor <= 1 {
		return base
	}
	return min(time.Duration(float64(max(base, time.Millisecond))*factor), limit)
}

// observeLag folds the lag of an applied event (stored in the stream to
// delta published) into the smoothed lag storeInterval reads.
func (s *snapshotStore) observeLag(d time.Duration) {
	for {
		old := s.lag.Load()
		next := old + (int64(d)-old)/16
		if s.lag.CompareAndSwap(old, next) {
			return
		}
	}
}

// snapshotBuffer returns an empty buffer to encode a snapshot into, one a
// finished write gave back when there is one: snapshots are the largest
// allocation of a busy worker after the server's own.
func (s *snapshotStore) snapshotBuffer() []byte {
	if p, ok := s.bufs.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

// maxReusedBuffer is the largest buffer kept for reuse, of a snapshot or
// a checkpoint: a conversation of megabytes should not pin its buffer for
// small ones.
const maxReusedBuffer = 1 << 20

// reuseSnapshotBuffer gives back a buffer whose snapshot has been written
// (nats.go copies what it publishes).
func (s *snapshotStore) reuseSnapshotBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxReusedBuffer {
		return
	}
	s.bufs.Put(&b)
}
