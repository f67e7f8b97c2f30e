package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// convState is a conversation held in memory by its lane. Its fields are
// grouped by what uses them; TestShortConversations guards its size (a
// field added may take it to the next allocation size class, and the
// memory of a short conversation with it).
type convState struct {
	// The conversation and how far the events stream has been applied to
	// it.
	id   string
	conv *conversation.Conversation
	// seq: every event of the conversation with a stream sequence up to
	// seq has been taken into account.
	seq uint64
	// version is the stream sequence of the last event that changed the
	// conversation: the same events make the same conversation, so a
	// version names one flat list whichever worker computed it, before or
	// after a crash or a failover.
	version uint64
	// events counts the conversation's events taken into account (read by
	// its rebuild, checkpoint included, and applied since).
	events uint64
	// live holds its replies being written (live.go); nil when none.
	live liveReplies

	// The flat list of the last delta published (nil when none was
	// published since the state was loaded: the next delta then carries
	// the whole list). flatJSON has the JSON of its entries, so that a
	// store does not encode the flatList again; flatBytes is their total
	// size (with commas), at most the snapshot limit (see publish).
	flat      []*conversation.Message
	flatJSON  flatJSON
	flatBytes int32

	// What the next event applied is checked for. treeBound bounds what
	// the snapshot holds besides its flatList (the context tree, its
	// frame): measured by the last check, grown by an allowance for each
	// event since; 0 when not known since the state was loaded. depthLeft
	// is how many events may be applied before the context tree's branch
	// depth is measured again; 0: at the next one (both store_limits.go).
	treeBound int32
	depthLeft int16
	// unverified marks a state loaded for reading, up to the stored
	// snapshot: events after it may exist that this worker was never
	// given (a crashed worker's, awaiting redelivery), so the first event
	// applied to it checks that it is the next one.
	unverified bool
	// gaps is the count of breaks in its consumer's deliveries the state
	// was last checked at: an event that arrived after a later break
	// checks that it is the next one (see gapWatch).
	gaps uint32

	// The snapshot store's part (convStore) and the checkpointer's: the
	// events since the conversation's last checkpoint, and their size.
	convStore
	sinceCheckpoint checkpointLag
	// checkpointing is set while a checkpoint of the state is written
	// (from the lane that begins it to the writer that ends it): the
	// compaction rule (checkpointer.compactDue) waits for it, so that a
	// hot conversation has one write under way, not one for each store.
	checkpointing atomic.Bool
	// repurge is set by a checkpoint write whose compaction did not remove
	// every event its checkpoint covers (the write failed or was skipped,
	// a purge or a delete failed): the next checkpoint's compaction purges
	// by subject, which removes what is left (see eventSeqs).
	repurge atomic.Bool
}

// readHead returns the version and sequence of the stored snapshot of id
// and its revision; all zero when there is none, read as how says.
func (w *Worker) readHead(ctx context.Context, id string, how read.Mode) (snapshotHead, uint64, error) {
	value, rev, err := w.reads.Snapshot(ctx, id, how)
	if err != nil || rev == 0 {
		return snapshotHead{}, 0, err
	}
	h, err := snapshotHeadOf(value)
	if err != nil {
		w.noteNewerForm(ctx, id, err)
		return snapshotHead{}, 0, fmt.Errorf("worker: read snapshot %s: %w", id, err)
	}
	return h, rev, nil
}

// stateForEvent returns the state an event at sequence seq applies to,
// loading it when the lane does not hold it: pre when it was loaded ahead
// for this event (see park), else now, on the lane. skip is true when the
// event has been taken into account already (a redelivery). gaps is the
// event's count of breaks in its consumer's deliveries: a cached state
// checked at an earlier count, or unverified, is checked against the
// stream first, and rebuilt up to seq when the event is not its next one
// (see gapWatch). A state is only ever built from the stream or checked
// this way, so every event up to its seq is in it, and skipping one is
// right.
func (w *Worker) stateForEvent(ctx context.Context, l *lane, id string, seq uint64, gaps uint32, pre *loadResult) (st *convState, skip bool, err error) {
	if st := l.cache.Get(id); st != nil {
		if seq <= st.seq {
			// A redelivery, maybe of an event not stored yet.
			return st, true, nil
		}
		if !st.unverified && st.gaps == gaps {
			return st, false, nil
		}
		next, err := w.reads.NextEvent(ctx, id, st.seq+1)
		if err != nil {
			return nil, false, fmt.Errorf("worker: next event of %s: %w", id, err)
		}
		if next.Sequence == seq {
			st.unverified, st.gaps = false, gaps
			return st, false, nil
		}
		// An earlier event was lost on the way or is pending elsewhere:
		// rebuild past it.
		w.metrics.healedEvent(ctx)
		w.cfg.logger.DebugContext(ctx, "conversation rebuilt past events missing from it", "conversation", id,
			"applied", st.seq, "missing", next.Sequence, "event", seq)
		l.cache.Drop(id)
	}
	if pre != nil {
		st, skip, err = pre.st, pre.skip, pre.err
	} else {
		st, skip, err = w.load(ctx, id, seq)
	}
	if st != nil {
		st.gaps = gaps
		l.cache.Put(st)
	}
	return st, skip, err
}

// load reads from the store the state of conversation id that its event
// at sequence seq applies to (nil, and skip true, when the stored snapshot
// covers that event already: a redelivery). The state is rebuilt from
// every event before seq, not only up to the stored snapshot: events
// between the two were delivered earlier and failed or are being
// redelivered; including them now keeps the order, and their redelivery
// is then skipped. It does not touch the lane's cache, so it may run off
// the lane.
func (w *Worker) load(ctx context.Context, id string, seq uint64) (st *convState, skip bool, err error) {
	head, rev, err := w.readHead(ctx, id, w.reads.Pick())
	if err != nil {
		return nil, false, err
	}
	if seq <= head.Sequence {
		return nil, true, nil
	}
	r, err := w.rebuild(ctx, id, seq, rev != 0)
	if err != nil {
		return nil, false, err
	}
	w.checkEventsKept(ctx, id, head, r)
	return newState(r, seq-1, head, rev), false, nil
}

// stateForRead returns the state of id to read: the lane's copy, else
// pre, a state loaded off the lane for the read (loadForRead); nil when
// the lane holds none and pre is nil. The lane keeps pre unless its cache
// let a state go since it counted lets (a copy of id it let go may be
// newer than pre, and a stale copy would serve every read until the next
// event). It runs on the lane.
func (w *Worker) stateForRead(l *lane, id string, pre *convState, lets uint64) *convState {
	// A conversation of a partition another worker owns changes behind
	// this worker's back: it is read from the store every time.
	if !w.owned.owns(id) {
		if st := l.cache.Peek(id); st != nil && !st.leaving { // a leaving one goes once stored
			l.cache.Drop(id)
		}
		return pre
	}
	if st := l.cache.Get(id); st != nil {
		return st
	}
	if pre != nil && l.cache.Lets() == lets {
		l.cache.Put(pre)
	}
	return pre
}

// loadForRead returns the state of id as stored, rebuilt up to the
// sequence of the stored snapshot; ErrUnknownConversation when nothing is
// stored. It does not touch a lane: a read loads off the lane, whose other
// conversations go on meanwhile.
func (w *Worker) loadForRead(ctx context.Context, id string) (*convState, error) {
	head, rev, err := w.readHead(ctx, id, w.reads.Pick())
	if err != nil {
		return nil, err
	}
	if rev == 0 {
		return nil, fmt.Errorf("%w: %s", streams.ErrUnknownConversation, id)
	}
	r, err := w.rebuild(ctx, id, head.Sequence+1, true)
	if err != nil {
		return nil, err
	}
	w.checkEventsKept(ctx, id, head, r)
	st := newState(r, head.Sequence, head, rev)
	st.unverified = true
	return st, nil
}

// newState returns the state of a conversation rebuilt by r: every event
// up to seq taken into account, with the stored snapshot head and
// revision.
func newState(r *replay, seq uint64, head snapshotHead, rev uint64) *convState {
	return &convState{id: r.id, conv: r.conv, live: r.live, seq: seq, version: r.last,
		convStore: convStore{storedVersion: head.Version, storedSeq: head.Sequence, rev: rev, phase: rand.Uint32()},
		events:    r.base + uint64(r.n), sinceCheckpoint: lagOf(r.n, r.bytes)}
}

// unsaved reports whether st has events no stored snapshot covers yet:
// waiting for a store, or in a write under way.
func (st *convState) unsaved() bool { return len(st.store.events()) > 0 || st.store.batch() != nil }

// settled reports whether st has nothing pending that needs its
// conversation soon: no events awaiting a store, no store queued or being
// written, no retry due, not leaving.
func (st *convState) settled() bool {
	return !st.unsaved() && !st.storing && st.retryAt == 0 && !st.leaving
}

// weight approximates the memory st holds: with a conversation, st
// itself with its place in the cache (stateBytes) and the conversation (see
// conversation.Conversation.Bytes); of its flat list, a slot for each
// entry and the JSON of derived messages (that of the others is their
// messages', see flatJSON); and the maps of the derived messages, which
// Bytes leaves out.
func (st *convState) weight() int64 {
	n := flatEntryBytes*len(st.flat) + (1+conversation.DecodedFactor)*st.flatJSON.bytes
	if st.conv != nil {
		n += stateBytes + st.conv.Bytes()
	}
	if st.store != nil {
		n += storeStateBytes
	}
	n += st.sinceCheckpoint.seqs.bytes()
	return int64(n)
}

// What weight allows for a state (the struct, 208 bytes, its node in the
// cache, 48, and its id; the allowance was set when the struct took 224
// and is kept, so that caches evict as they did), for its store state while it has one (the
// struct, 32 bytes, and its place in the lane's store clock while queued),
// and for an entry of the flat list (its slot in the list, and in flatJSON
// for a derived one).
const (
	stateBytes      = 320
	storeStateBytes = 64
	flatEntryBytes  = 24
)

// A convState is what the lanes' caches hold (internal/convcache): these
// methods are what a cache asks of it.

// Key returns the conversation's id.
func (st *convState) Key() string { return st.id }

// Weight approximates the memory st holds (see weight).
func (st *convState) Weight() int64 { return st.weight() }

// Settled reports whether nothing pending needs st's conversation soon
// (see settled).
func (st *convState) Settled() bool { return st.settled() }

// Compact lets go of what an idle state rebuilds when next used: settled,
// so with no store pending, its store state goes (the next event makes a
// new one), and its conversation is compacted (see
// conversation.Conversation.Compact).
func (st *convState) Compact() {
	st.dropStore()
	if st.conv != nil {
		st.conv.Compact()
	}
}
