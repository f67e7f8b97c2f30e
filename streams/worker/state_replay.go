package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// replayTimeout bounds one rebuild.
const replayTimeout = time.Minute

// replayReadTries is how many times a rebuild asks for a batch of events
// that timed out before it fails: each try may go to a frozen replica,
// which fails it after the reader's quiet timeout (1 s).
const replayReadTries = 5

// rebuild replays the events of conversation id stored before sequence
// before, through the same decode, validate and apply steps as live events,
// and returns the replay done: its conversation, and the sequence of the
// last event that changed it (its version; 0 when none did). Events that
// would be refused are skipped silently: they were reported when they
// first arrived; but not for their size, which a lowered limit does not
// take back (see decodeStored). stored says whether the conversation has a stored
// snapshot: only then can it have a checkpoint, which the replay starts
// from (see checkpoint.go). Cost: for a new conversation, one read from a
// replica (see replay.run); otherwise two from the stream's leader (three
// when later events are stored) and batched reads of up to replayBatch
// events, after the checkpoint's get.
func (w *Worker) rebuild(ctx context.Context, id string, before uint64, stored bool) (*replay, error) {
	start := time.Now()
	if before <= 1 {
		r := w.newReplay(id, before)
		r.unstored = !stored
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	var r *replay
	for try := 1; ; try++ {
		r = w.newReplay(id, before)
		r.unstored = !stored
		var rev uint64
		if stored {
			cp, conv, cpRev, err := w.cp.resume(ctx, id, before)
			if err != nil {
				return nil, fmt.Errorf("worker: rebuild %s: %w", id, err)
			}
			rev = cpRev
			if cp != nil {
				r.conv, r.seen, r.last, r.base, r.checkpoint = conv, cp.Seq, cp.Version, cp.Events, true
			}
		}
		if err := r.run(ctx); err != nil {
			return nil, fmt.Errorf("worker: rebuild %s after %d events: %w", id, r.n, err)
		}
		if !stored || !w.cp.compacting() {
			break
		}
		// A checkpoint written since the one read may have had the
		// events read after it purged before they were read
		// (checkpoint_compact.go).
		now, err := w.cp.checkpointRevision(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("worker: rebuild %s: checkpoint read again: %w", id, err)
		}
		if now == rev {
			break
		}
		if try == compactRebuildTries {
			return nil, fmt.Errorf("worker: rebuild %s: %w %d times", id, errCheckpointMoved, try)
		}
	}
	w.metrics.rebuilt(ctx, time.Since(start), r.checkpoint)
	w.cfg.logger.DebugContext(ctx, "conversation rebuilt", "conversation", id, "events", r.n, "before", before,
		"checkpoint", r.checkpoint, "elapsed", time.Since(start))
	return r, nil
}

// newReplay returns a rebuild of conversation id up to sequence before,
// not yet begun, into an empty conversation.
func (w *Worker) newReplay(id string, before uint64) *replay {
	conv := conversation.NewConversation(w.cfg.limits.conversationOptions()...)
	return &replay{w: w, id: id, before: before, conv: conv}
}

// replayBatch is the most events one batched read of a rebuild returns,
// and replayBatchBytes about the most bytes (the server stops after the
// event that reaches it).
const (
	replayBatch      = 1024
	replayBatchBytes = 8 << 20
)

// behindBatch returns the size of a rebuild's first batched read when
// events after the one being applied are stored already (see replay.run):
// as many events before sequence before as there would be if the stored
// ones were spread evenly between the first and the last, one to see the
// end, and one to spare.
func behindBatch(stored, first, last, before uint64) int {
	needed := uint64(1) // the first
	if stored > 2 && last > first {
		// Of the stored-2 between the first and the last, the share
		// stored before before, rounded up.
		span := last - first
		needed += ((stored-2)*(before-1-first) + span - 1) / span
	}
	return int(min(needed+2, replayBatch))
}

// replay is one rebuild in progress.
type replay struct {
	w      *Worker
	id     string
	before uint64
	conv   *conversation.Conversation
	live   liveReplies
	// end is the sequence of the last event to read: r.before-1, or the
	// conversation's last event when that is earlier.
	end   uint64
	n     int    // events read
	bytes int    // their size
	seen  uint64 // sequence of the last event read (or the checkpoint's)
	last  uint64 // sequence of the last event that changed conv
	// unstored is set when the conversation has no stored snapshot: it is
	// most likely new (see run).
	unstored bool
	// checkpoint is set when conv began as the conversation's checkpoint,
	// which took base events into account.
	checkpoint bool
	base       uint64
	// size is the size of the next batched read.
	size int
	// oneByOne is set once the server refused a batched read (a server
	// older than 2.11): the events are then read from the leader one at a
	// time.
	oneByOne bool
}

// run reads and applies every event of the conversation before r.before
// (after the checkpoint's sequence, when r starts from one: see
// afterCheckpoint).
//
// A replica (for a conversation with no stored snapshot) or the leader
// first names the conversation's first event: for a new conversation, the
// most common rebuild, there is none before r.before, and that is all.
// Then the leader names the last, and the rest comes in batches from
// whichever replica answers, without a consumer (creating one goes through
// the meta leader, which made a failover's burst of rebuilds slow) and
// without a round trip per event. The first batch starts at the stream's
// beginning, where the server counts a subject's events from its index
// (from anywhere else it scans a block), and the batches stop at the last
// event needed. A replica may lag behind the leader: when one has nothing
// more before the end, the leader is asked for the next event, which is
// applied, so that every turn of the loop makes progress.
//
// When events after r.before are stored already (the worker is behind: a
// restart with a backlog, a thrashing cache), a batch goes on to read them
// too, up to its size, and for a conversation whose events are spread
// thinly over the stream each costs the server a scan from the one before.
// The leader's count of the conversation's events then sizes the first
// batch to what is needed, as if the events were spread evenly (see
// behindBatch), and any batch after it is twice the last. Too small costs
// more than too large: only the first batch starts at the stream's
// beginning, and a later one costs the server a partial scan of a block to
// count what follows. (Reading one event at a time from the leader instead
// made a restart with a backlog twice as slow: a round trip an event.)
func (r *replay) run(ctx context.Context) error {
	if r.checkpoint {
		return r.afterCheckpoint(ctx)
	}
	// A conversation with no stored snapshot is most likely new: any
	// replica is asked first, and one that holds an event at or after
	// r.before holds every event before it, none for a new conversation.
	// One that holds none may lag: the leader is asked then. (A server
	// answers a direct get in the read loop of the worker's connection,
	// holding up what else the worker sends. Asking a replica first for
	// conversations with a stored snapshot too made BenchmarkRestart slower
	// in 6 of 7 alternating runs: the leader is asked for those.)
	var first *jetstream.RawStreamMsg
	var err error
	if r.unstored {
		first, err = r.w.reads.DirectFirstEvent(ctx, r.id)
	}
	if err != nil || first == nil {
		first, err = r.w.reads.NextEvent(ctx, r.id, 1)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil || first.Sequence >= r.before {
		return err
	}
	last, err := r.w.reads.LastEvent(ctx, r.id)
	if err != nil {
		return err
	}
	r.end = min(last.Sequence, r.before-1)
	r.size = replayBatch
	if last.Sequence > r.before {
		stored, err := r.w.reads.StoredEvents(ctx, r.id)
		if err != nil {
			return err
		}
		r.size = behindBatch(stored, first.Sequence, last.Sequence, r.before)
	}
	return r.batches(ctx)
}

// afterCheckpoint is run for a replay that starts from a checkpoint: it
// reads the events after the checkpoint's sequence. The leader names the
// last event first: when it is the checkpoint's, that is the only read
// (the conversation's last event comes from the server's subject index,
// where its next event after a sequence costs a scan of the events of
// its block stored since). Then the leader names the next event after the
// checkpoint: when the worker keeps up, as after an eviction, it is the
// one being applied, and that is all (a batched read would also count
// what follows it, a second scan). Otherwise batched reads follow as in
// run.
func (r *replay) afterCheckpoint(ctx context.Context) error {
	last, err := r.w.reads.LastEvent(ctx, r.id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // dropped by the stream's limits: the checkpoint has them
	}
	if err != nil {
		return err
	}
	r.end = min(last.Sequence, r.before-1)
	if r.end <= r.seen {
		return nil
	}
	if done, err := r.fromLeader(ctx); done || err != nil {
		return err
	}
	r.size = replayBatch
	if last.Sequence > r.before {
		stored, err := r.w.reads.StoredEvents(ctx, r.id)
		if err != nil {
			return err
		}
		// The checkpoint's events are among those counted, and its
		// sequence stands in for the first event after it.
		r.size = behindBatch(stored-min(stored, r.base), r.seen, last.Sequence, r.before)
	}
	return r.batches(ctx)
}

// batches reads the events after r.seen up to r.end in batched reads
// (r.size events the first), asking the leader for the next event when a
// replica has no more (see run).
func (r *replay) batches(ctx context.Context) error {
	var err error
	for done := false; !done; {
		var more bool
		if more, done, err = r.batch(ctx); err == nil && !done && !more {
			done, err = r.fromLeader(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fromLeader reads the conversation's next event after r.seen from the
// stream's leader and applies it when it was stored before r.before. It
// returns true when the rebuild is complete.
func (r *replay) fromLeader(ctx context.Context) (bool, error) {
	m, err := r.w.reads.NextEvent(ctx, r.id, r.seen+1)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if m.Sequence >= r.before {
		return true, nil
	}
	r.apply(ctx, r.w.decodeStored(m), m.Sequence)
	return m.Sequence >= r.end, nil
}

// batch reads the conversation's events after r.seen in one batched direct
// get, answered by any replica, and applies those stored before r.before.
// done is true when it read r.end or an event after it (a replica applies
// the stream in order, so it had every event before that one); more is
// true when the replica had more events than one batch holds.
func (r *replay) batch(ctx context.Context) (more, done bool, err error) {
	if r.oneByOne {
		return false, false, nil
	}
	var pending uint64
	size := r.size
	r.size = min(2*r.size, replayBatch)
	// A replica that went quiet (a frozen server) fails the read after the
	// reader's timeout; the read is asked again, from what was applied, and
	// goes to whichever replica answers first, rather than failing the
	// event that needed the rebuild.
	for try := 1; ; try++ {
		err = r.w.reads.EventBatch(ctx, r.id, r.seen+1, size, replayBatchBytes,
			func(m *jetstream.RawStreamMsg, left uint64) bool {
				if m.Sequence < r.before {
					r.apply(ctx, r.w.decodeStored(m), m.Sequence)
				}
				pending = left
				done = m.Sequence >= r.end
				return !done
			})
		if try == replayReadTries || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			break
		}
		r.w.cfg.logger.WarnContext(ctx, "rebuild read timed out; asking again", "conversation", r.id, "try", try, "err", err)
	}
	if errors.Is(err, read.ErrBatchUnsupported) {
		r.oneByOne = true
		return false, false, nil
	}
	return pending > 0 && !done, done, err
}

// apply applies one stored event to the conversation being rebuilt.
func (r *replay) apply(ctx context.Context, d *delivery, seq uint64) {
	if err := r.w.validate(ctx, d); err == nil && applyEvent(r.conv, &r.live, d.event.Type(), d.data, d.message) == nil {
		r.last = seq
	}
	r.n++
	r.bytes += d.size
	r.seen = seq
}
