package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// checkpointer reads and writes conversations' checkpoints (checkpoint.go)
// in the checkpoint bucket: it decides when one is due, writes it on the
// writers with a bounded number of writes under way and queued, and reads
// it back for a rebuild. A worker makes one in Run once the bucket is
// provisioned, with what it needs passed in. With checkpoints off
// (WithCheckpoints) the worker has none: a nil *checkpointer finds no
// checkpoint due and reads none (TestCheckpointsOffWorks), which costs one
// pointer test where a no-op implementation behind an interface would add
// a dynamic call to every snapshot store (busyDue).
type checkpointer struct {
	bucket jetstream.KeyValue
	// keys reads the bucket's checkpoints as its leader holds them: one
	// read from a replica behind it may be older than the events the
	// stream still holds (see checkpoint_compact.go).
	keys    *read.Keys
	writers *writers // shared with the snapshot writes
	metrics *instruments
	logger  *slog.Logger
	// maxPayload is the server's, asked at each write: a reconnect may
	// land on a server with another.
	maxPayload func() int64
	// convOpts make the conversation a checkpoint is decoded into (the
	// worker's limits).
	convOpts []conversation.Option
	// slots holds a token for each write under way (checkpointsInFlight
	// at most); queue holds the writes waiting for one (see onSlot).
	slots chan struct{}
	queue chan func()
	// bufs holds the *checkpointBuffers of written checkpoints, for reuse.
	bufs sync.Pool
	// compactor purges the events a checkpoint written covers, when the
	// worker and the events stream say so (nil: checkpoints off in tests
	// that build a checkpointer alone; see checkpoint_compact.go).
	compactor *compactor
	// erased reports whether a checkpoint of conversation id at stream
	// sequence seq is of a conversation erased since (erase.go): such a
	// write, queued before the erasure, is dropped. Nil: none is.
	erased func(id string, seq uint64) bool
	// stopped is set by stop: writes not begun are dropped, and a
	// checkpoint written purges nothing.
	stopped atomic.Bool
}

// newCheckpointer returns the checkpointer of bucket, read through keys,
// which runs its writes on ws, counts them in ins, logs to log, queues at
// most waiting writes for a slot, and decodes checkpoints into
// conversations made with convOpts.
func newCheckpointer(bucket jetstream.KeyValue, keys *read.Keys, ws *writers, ins *instruments, log *slog.Logger,
	maxPayload func() int64, waiting int, convOpts []conversation.Option) *checkpointer {
	return &checkpointer{bucket: bucket, keys: keys, writers: ws, metrics: ins, logger: log, maxPayload: maxPayload,
		convOpts: convOpts, slots: make(chan struct{}, checkpointsInFlight), queue: make(chan func(), waiting)}
}

// checkpointAmplification is the checkpoint writing policy: a
// conversation let go of is written when the events applied since the
// checkpoint it was loaded from add up to at least 1/checkpointAmplification
// of it (a conversation of megabytes is not rewritten for a few small
// events). Writing a checkpoint costs a few nanoseconds a byte; replaying
// an event 25 µs (events close together in the stream) to 300 µs (among
// 1,000 conversations), about what writing 5 to 60 KB costs, so an eighth
// of a conversation of events of a few hundred bytes is already worth
// rewriting it for, and a small conversation is written for a single
// event: with 1,000 conversations of 8 events through a cache of 950 (each
// event a rebuild), writing only after 8 events took 7% more CPU and had
// four times the p99 (BENCHMARKS.md).
const checkpointAmplification = 8

// A conversation that stays busy is never let go of, so it is also
// checkpointed along with a snapshot store once at least
// checkpointBusyEvents events have come since its last checkpoint and they
// add up to a quarter of it (checkpointBusyAmplification): after a crash,
// which writes none, its rebuild replays at most about a quarter of its
// events. Stricter than the rule above, because it costs a busy worker
// while the other is paid when a conversation leaves: writing a checkpoint
// this often adds about a byte written for every byte of events (a
// checkpoint is four to six times smaller than the JSON it holds).
const (
	checkpointBusyEvents        = 64
	checkpointBusyAmplification = 4
)

// checkpointsInFlight bounds the checkpoint writes under way at once: an
// eviction beyond it lets its conversation go without one (a checkpoint
// only saves work), so that a burst of evictions keeps a bounded number
// of conversations alive for their encoding.
const checkpointsInFlight = 64

// checkpointsWaiting bounds the checkpoint writes queued for a slot while
// every slot is busy (see checkpointer.queueWrite). Each holds what it
// captured: a pointer a message, and the groups. Past it, a compacting sweep leaves
// the rest uncompacted for the next one, and a conversation gone unused
// goes without (a sweep lets go of at most convcache.ExpireMax a lane).
const checkpointsWaiting = 16384

// checkpointStopBudget bounds how long a graceful stop spends writing
// checkpoints, after its snapshots are stored: conversations whose
// checkpoint is not written by then are rebuilt from their last one.
const checkpointStopBudget = 5 * time.Second

// resume returns conversation id's checkpoint (its messages and groups
// dropped), the conversation it holds and its revision, for a rebuild up
// to sequence before to start from, when there is one before it. Without
// a usable one (none, unreadable, too late, the bucket not answering, or
// checkpoints off) it returns nils and the rebuild replays every event: a
// checkpoint only saves work, and the events stream alone decides whether
// a rebuild can be done. With compaction on, the events before the
// checkpoint may be gone: one that cannot be read, or is later than
// before, is an error instead (see checkpoint_compact.go).
func (c *checkpointer) resume(ctx context.Context, id string, before uint64) (*checkpoint, *conversation.Conversation, uint64, error) {
	if c == nil {
		return nil, nil, 0, nil
	}
	value, rev, err := c.get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, 0, nil
	}
	if err != nil {
		if c.compacting() {
			return nil, nil, 0, fmt.Errorf("checkpoint not read, and the events it covers may be compacted: %w", err)
		}
		c.logger.WarnContext(ctx, "checkpoint not read; replaying every event", "conversation", id, "err", err)
		return nil, nil, 0, nil
	}
	cp, conv, err := decodeCheckpoint(value, c.convOpts...)
	if err != nil {
		if c.compacting() {
			// Replaying what is left would store a shorter conversation
			// over the stored one.
			return nil, nil, 0, fmt.Errorf("checkpoint not usable, and the events it covers may be compacted: %w", err)
		}
		c.logger.WarnContext(ctx, "checkpoint not usable; replaying every event", "conversation", id, "err", err)
		return nil, nil, 0, nil
	}
	if cp.Seq >= before {
		// Written after the event being applied was: a worker applied it
		// before it crashed, and it is being redelivered.
		if c.compacting() {
			return nil, nil, 0, fmt.Errorf("checkpoint at sequence %d is past the rebuild's end %d (the stored snapshot read from a replica behind it), and the events it covers may be compacted", cp.Seq, before-1)
		}
		return nil, nil, 0, nil
	}
	return cp, conv, rev, nil
}

// compacting reports whether the events checkpoints cover may be purged,
// by this worker or another (checkpoint_compact_mark.go).
func (c *checkpointer) compacting() bool { return c != nil && c.compactor.on() }

// checkpointReadTimeout bounds one read of a checkpoint, and
// checkpointReadTries is how many reads a rebuild makes before it replays
// every event instead. A read goes to any replica of the bucket (a direct
// get); one sent to a frozen server is never answered, and without a bound
// of its own it held the rebuild, and the event that needed it, for the
// rebuild's whole minute (TestClusterFaults); with 2 s a try, for 5 s and
// more (BenchmarkClusterFaults), where a replica that is up answers at
// once.
const (
	checkpointReadTimeout = time.Second
	checkpointReadTries   = 3
)

// get reads the checkpoint of conversation id and its revision, as the
// bucket's leader holds it (read.Keys), asking again when a read times
// out; jetstream.ErrKeyNotFound when there is none.
func (c *checkpointer) get(ctx context.Context, id string) ([]byte, uint64, error) {
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, checkpointReadTimeout)
		value, rev, err := c.keys.Get(rctx, id)
		cancel()
		if err == nil || try == checkpointReadTries || ctx.Err() != nil ||
			!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			return value, rev, err
		}
	}
}

// due reports whether st has changed enough since its last checkpoint to
// be worth a new one (see checkpointAmplification).
func (c *checkpointer) due(st *convState) bool {
	// Only a state a stored snapshot covers: one whose store failed has
	// its events redelivered, and a rebuild for them could not use it.
	// Not while a reply is written: its text so far is not in the
	// conversation (live.go), and a rebuild replays its chunks.
	return c != nil && st.conv != nil && len(st.live) == 0 && !st.unsaved() && st.storedSeq >= st.seq &&
		st.sinceCheckpoint.events > 0 && int(st.sinceCheckpoint.bytes)*checkpointAmplification >= st.conv.MessageBytes()
}

// busyDue reports whether st, being stored, has changed enough since its
// last checkpoint for one to go with the store (see checkpointBusyEvents).
// With compaction on, one is also due once its events since then add up
// to more than a multiple of it (compactDue).
func (c *checkpointer) busyDue(st *convState) bool {
	if c == nil || st.conv == nil || len(st.live) != 0 || st.sinceCheckpoint.events == 0 {
		return false
	}
	held := st.conv.MessageBytes()
	return st.sinceCheckpoint.events >= checkpointBusyEvents && int(st.sinceCheckpoint.bytes)*checkpointBusyAmplification >= held ||
		c.compactDue(st, held)
}

// write writes st's checkpoint in the background when it is due (due) and
// one of the checkpointsInFlight slots is free, or, with wait, frees up
// before ctx ends; it reports whether a write began. It runs on the lane.
func (c *checkpointer) write(ctx context.Context, st *convState, wait bool) bool {
	if !c.due(st) || !c.takeSlot(ctx, wait) {
		return false
	}
	c.writeHeld(ctx, st, capture(st))
	return true
}

// writeCaptured writes cp, a checkpoint of st captured with its store
// (busyDue, never true of a nil checkpointer), in the background when one
// of the checkpointsInFlight slots is free; a busy conversation's next
// store captures another. It runs on the lane.
func (c *checkpointer) writeCaptured(ctx context.Context, st *convState, cp *checkpointOf) {
	if c.takeSlot(ctx, false) {
		c.writeHeld(ctx, st, cp)
	}
}

// takeSlot takes one of the checkpointsInFlight slots: a free one, or,
// with wait, one that frees up before ctx ends. It reports whether it
// did; the write that holds it gives it back.
func (c *checkpointer) takeSlot(ctx context.Context, wait bool) bool {
	if wait {
		select {
		case c.slots <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if c.trySlot() {
		return true
	}
	c.metrics.checkpointed(ctx, "busy")
	return false
}

// trySlot takes a free one of the checkpointsInFlight slots, if any.
func (c *checkpointer) trySlot() bool {
	select {
	case c.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// quiet writes the checkpoint of st, about to be compacted, when one is
// due (due), on a free slot or queued for one. It reports false when st
// must wait for a later sweep, the queue full: compacted states are not
// looked at again until used, and a checkpoint skipped here would leave a
// crash to replay the events of an idle conversation. It runs on the
// lane.
func (c *checkpointer) quiet(ctx context.Context, st *convState) bool {
	return !c.due(st) || c.queueWrite(ctx, st, capture(st))
}

// leaving writes the checkpoint of st, being let go, when one is due
// (due), on a free slot or queued for one, holding the messages it
// captured until then; with the queue full it is not written. It runs on
// the lane.
func (c *checkpointer) leaving(ctx context.Context, st *convState) {
	if c.due(st) && !c.queueWrite(ctx, st, capture(st)) {
		c.metrics.checkpointed(ctx, "busy")
	}
}

// writeHeld encodes and writes cp, a checkpoint of st, in the background,
// on a slot taken for it, and counts st's changes since cp as its changes
// since its last checkpoint. It runs on the lane; the encoding
// does not, so that a long conversation's does not hold up the lane's
// events (a conversation of 26,085 messages takes 63 ms).
func (c *checkpointer) writeHeld(ctx context.Context, st *convState, cp *checkpointOf) {
	job := c.writeOf(ctx, st, cp)
	checkpointed(st, cp)
	st.checkpointing.Store(true)
	c.runHeld(job)
}

// runHeld runs job on the writers, on the slot its caller took, then gives
// the slot on (see giveSlot).
func (c *checkpointer) runHeld(job func()) {
	c.writers.run(func() {
		job()
		c.giveSlot()
	})
}

// queueWrite is writeHeld without a slot taken (see onSlot). It reports
// false, changing nothing, when the queue is full. It runs on the lane.
func (c *checkpointer) queueWrite(ctx context.Context, st *convState, cp *checkpointOf) bool {
	// Set before the write is handed on, which may end it at once.
	st.checkpointing.Store(true)
	if !c.onSlot(c.writeOf(ctx, st, cp)) {
		st.checkpointing.Store(false)
		return false
	}
	checkpointed(st, cp)
	return true
}

// onSlot runs job on the writers on a free one of the checkpointsInFlight
// slots, or else queues it in queue for the next write that finishes to
// run on its slot: writes wait without a goroutine each. It reports
// false, job dropped, when the queue is full.
func (c *checkpointer) onSlot(job func()) bool {
	if c.trySlot() {
		c.runHeld(job)
		return true
	}
	select {
	case c.queue <- job:
	default:
		return false
	}
	// A slot given back since trySlot could have missed the write queued.
	if c.trySlot() {
		c.writers.run(c.giveSlot)
	}
	return true
}

// giveSlot runs the queued writes on the slot its caller holds, then gives
// it back, and takes one again for writes queued meanwhile: a write is
// queued before its writer tries for a slot, so one of the two runs it.
func (c *checkpointer) giveSlot() {
	for {
		select {
		case job := <-c.queue:
			job()
			continue
		default:
		}
		<-c.slots
		if len(c.queue) == 0 || !c.trySlot() {
			return
		}
	}
}

// checkpointed counts st's changes since cp, a checkpoint of it being
// written, as its changes since its last checkpoint, and leaves in st's
// list of event sequences those the checkpoint's compaction keeps (see
// eventSeqs.checkpointed).
func checkpointed(st *convState, cp *checkpointOf) {
	st.sinceCheckpoint.events -= cp.since.events
	st.sinceCheckpoint.bytes -= cp.since.bytes
	st.sinceCheckpoint.checkpointedAt(cp.seq)
	if cp.dels == nil {
		// Its compaction purges by subject, which covers what an earlier
		// one left (see convState.repurge).
		st.repurge.Store(false)
	}
}

// checkpointLag is the checkpointer's part of a conversation's state: the
// events applied since its last checkpoint and their size, which decide
// when the next one is due (see checkpointer.due), and the sequences of
// its events left in the stream, which compaction removes.
type checkpointLag struct {
	// int32 (saturating) keeps convState within its size class
	// (TestShortConversations).
	events, bytes int32
	// seqs is nil until the conversation's first checkpoint since it was
	// loaded: its compaction purges by subject whatever the list says,
	// and a conversation too short to be checkpointed carries no list
	// (TestShortConversations).
	seqs *eventSeqs
}

// addSeq records the event at stream sequence seq, applied, once the
// conversation has a list (see seqs).
func (l *checkpointLag) addSeq(seq uint64) {
	if l.seqs != nil {
		l.seqs.add(seq)
	}
}

// checkpointedAt updates the list for a checkpoint at seq, begun (see
// eventSeqs.checkpointed), making it at the first.
func (l *checkpointLag) checkpointedAt(seq uint64) {
	if l.seqs == nil {
		l.seqs = new(eventSeqs)
	}
	l.seqs.checkpointed(seq)
}

// lagOf returns the lag of n events of size bytes in all.
func lagOf(n, size int) checkpointLag { return checkpointLag{events: clamp32(n), bytes: clamp32(size)} }

// add counts an event of size bytes applied.
func (l *checkpointLag) add(size int) {
	l.events = clamp32(int(l.events) + 1)
	l.bytes = clamp32(int(l.bytes) + size)
}

// writeOf returns the write of cp, a checkpoint of st, to run on a slot.
func (c *checkpointer) writeOf(ctx context.Context, st *convState, cp *checkpointOf) func() {
	id := st.id
	limit := int(c.maxPayload())
	writing, repurge := &st.checkpointing, &st.repurge
	return func() {
		// Cleared whatever the outcome: the next store's checkpoint may
		// then go (compactDue).
		defer writing.Store(false)
		// Unless compaction removed what cp covers, the next one purges
		// by subject (convState.repurge).
		compacted := false
		defer func() {
			if !compacted {
				repurge.Store(true)
			}
		}()
		if c.stopped.Load() {
			c.metrics.checkpointed(ctx, "skipped")
			return
		}
		if c.erased != nil && c.erased(id, cp.seq) {
			c.metrics.checkpointed(ctx, "skipped")
			c.logger.DebugContext(ctx, "checkpoint not written: the conversation was erased", "conversation", id)
			return
		}
		bufs := c.buffers()
		defer c.reuse(bufs) // after the put: nats.go copies what it publishes
		value, err := cp.encode(bufs)
		if err == nil && len(value) > limit {
			err = fmt.Errorf("%d bytes, over the server's max payload of %d", len(value), limit)
		}
		if err != nil {
			c.metrics.checkpointed(ctx, "skipped")
			c.logger.DebugContext(ctx, "checkpoint not written", "conversation", id, "err", err)
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		written := true
		if c.compacting() {
			written, err = c.putNewer(wctx, id, value, cp.seq)
		} else {
			_, err = c.bucket.Put(wctx, id, value)
		}
		switch {
		case err != nil:
			c.metrics.checkpointed(ctx, "failed")
			c.logger.WarnContext(ctx, "checkpoint not written", "conversation", id, "err", err)
			return
		case !written:
			c.metrics.checkpointed(ctx, "stale")
			return
		}
		c.metrics.checkpointed(ctx, "written")
		if c.compactor.purging(time.Now()) && !c.stopped.Load() {
			compacted = c.compactor.compact(ctx, id, cp.seq, cp.dels)
		}
	}
}

// buffers returns room to encode a checkpoint in, that of a finished
// write when there is one.
func (c *checkpointer) buffers() *checkpointBuffers {
	if b, ok := c.bufs.Get().(*checkpointBuffers); ok {
		return b
	}
	return new(checkpointBuffers)
}

// reuse gives back the room of a written checkpoint, unless it is larger
// than maxReusedBuffer.
func (c *checkpointer) reuse(b *checkpointBuffers) {
	if cap(b.plain) > maxReusedBuffer || cap(b.packed) > maxReusedBuffer {
		return
	}
	c.bufs.Put(b)
}

// writeAll writes, on every one of ls, the checkpoints due of the
// conversations held, and waits for them, for at most
// checkpointStopBudget: a step of a graceful stop, after the snapshots
// are stored.
func (c *checkpointer) writeAll(ctx context.Context, ls *lanes) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, checkpointStopBudget)
	defer cancel()
	start := time.Now()
	var written, due atomic.Int64 // the lanes run at once
	err := ls.callAll(ctx, func(l *lane) {
		l.cache.Each(func(st *convState) {
			if ctx.Err() == nil && c.due(st) {
				due.Add(1)
				if c.write(ctx, st, true) {
					written.Add(1)
				}
			}
		})
	})
	// Each write holds a slot until it returns, and one queued is run on
	// a slot before that is given back. (Not a WaitGroup: the idle sweep
	// may begin a write while this waits.)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for (len(c.slots) > 0 || len(c.queue) > 0) && ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	if err != nil || written.Load() < due.Load() {
		c.logger.WarnContext(ctx, "checkpoints on stop not all written", "due", due.Load(), "begun", written.Load(), "err", err)
	}
	c.logger.InfoContext(ctx, "checkpoints written on stop", "begun", written.Load(), "elapsed", time.Since(start))
}

// stop ends the checkpointer's work before the worker's connection
// closes: writes queued or begun from now are dropped (the conversations
// are rebuilt from their last checkpoint, as after checkpointStopBudget),
// and it waits, at most as long as one write and its purge may take, for
// the writes under way. Without it, a stop whose checkpoints outlasted
// the budget left them running on a closed connection, each logging
// "events not compacted ... connection closed" (TestStopQuiet).
func (c *checkpointer) stop(ctx context.Context) {
	if c == nil {
		return
	}
	c.stopped.Store(true)
	ctx, cancel := context.WithTimeout(ctx, storeTimeout+compactTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for (len(c.slots) > 0 || len(c.queue) > 0) && ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}
