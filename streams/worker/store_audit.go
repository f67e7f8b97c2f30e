package worker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// A snapshot bucket whose files were truncated or restored from an older
// copy serves snapshots behind the events stream, the source of truth, and
// nothing else shows it: a conversation's next event rebuilds it from
// every event before that one (load), but one without further events is
// served stale. So once a worker consumes, it compares every conversation
// whose events are all settled (at or below each consumer's acknowledgement
// floor) with its stored snapshot, once, in the background: a snapshot
// missing, or covering fewer events than the stream holds, is counted as
// the events stream's losses are (state_eventslost.go), with
// convstream.storage.damaged with what snapshots, and rebuilt from the
// events stream (checkpoint and events, as a cache miss loads it) and
// stored, on the conversation's lane so that it never races an event of
// it (repairSnapshot). What cannot be rebuilt (a conversation of a
// partition another worker owns, a rebuild or write that failed) is
// reported: an error log and a line on /readyz (TestStaleSnapshotsRebuilt).
// A conversation whose last event was dead-lettered, never applied, is
// rebuilt with it, as its next event's load would.

// auditLogged is how many stale snapshots an audit logs one by one; the
// metric counts them all and the /readyz line gives the total.
const auditLogged = 10

// snapshotAudit is what the last audit found.
type snapshotAudit struct {
	report atomic.Pointer[string]
	// repaired counts the snapshots rebuilt; done is set once an audit
	// ran to its end.
	repaired atomic.Int64
	done     atomic.Bool
}

// auditSnapshots runs the audit; it returns when done or when ctx ends.
func (w *Worker) auditSnapshots(ctx context.Context) {
	floors, ok := w.settledFloors(ctx)
	if !ok {
		return
	}
	info, err := w.stream.Info(ctx, jetstream.WithSubjectFilter(w.cfg.subjects.AllEvents()))
	if err != nil {
		w.cfg.logger.WarnContext(ctx, "snapshot audit not run: listing the conversations", "err", err)
		return
	}
	var stale int
	var first string
	for subject := range info.State.Subjects {
		if ctx.Err() != nil {
			return
		}
		id, ok := w.cfg.subjects.StoredConversationOf(subject, w.partitions())
		if !ok {
			continue
		}
		floor := floors[0]
		if n := w.partitions(); n > 0 {
			floor = floors[streams.PartitionOf(id, n)]
		}
		last, err := w.stream.GetLastMsgForSubject(ctx, subject)
		if err != nil || last.Sequence > floor {
			continue // gone meanwhile, or not settled yet
		}
		head, rev, err := w.readHead(ctx, id, w.reads.Pick())
		if err != nil || rev != 0 && head.Sequence >= last.Sequence {
			continue
		}
		w.metrics.storageDamaged(ctx, "snapshots")
		repaired, err := w.repairSnapshot(ctx, id, subject)
		if err == nil && repaired {
			w.audit.repaired.Add(1)
			w.cfg.logger.WarnContext(ctx, "stored snapshot behind the events stream rebuilt from it",
				"conversation", id, "snapshot_sequence", head.Sequence, "last_event", last.Sequence, "snapshot_missing", rev == 0)
			continue
		}
		if err == nil {
			continue // an event of it came first: its store covers it
		}
		stale++
		what := fmt.Sprintf("%s: snapshot at event %d, the stream's last event %d", id, head.Sequence, last.Sequence)
		if rev == 0 {
			what = fmt.Sprintf("%s: no snapshot, the stream's last event %d", id, last.Sequence)
		}
		if first == "" {
			first = what
		}
		if stale <= auditLogged {
			w.cfg.logger.ErrorContext(ctx, "stored snapshot behind the events stream, not rebuilt; the conversation's next event rebuilds it",
				"conversation", id, "snapshot_sequence", head.Sequence, "last_event", last.Sequence, "snapshot_missing", rev == 0, "err", err)
		}
	}
	w.audit.done.Store(true)
	if stale == 0 {
		return
	}
	line := fmt.Sprintf("%s snapshot bucket behind the events stream for %d conversations (first %s)",
		time.Now().UTC().Format(time.RFC3339), stale, first)
	w.audit.report.Store(&line)
}

// errNotOwned: a conversation of a partition another worker owns is
// left to that worker, whose copy may be ahead of the store.
var errNotOwned = errors.New("worker: conversation of a partition another worker owns")

// repairSnapshot rebuilds the snapshot of conversation id, whose events
// are on subject, from the events stream and stores it. It runs on the
// conversation's lane behind everything queued there, events included,
// the serialisation the events take, and leaves the conversation alone
// (repaired false, no error) when the lane holds or loads a copy of it:
// that copy's store covers what the audit found. The write is a
// compare-and-set on the revision read on the lane, so a snapshot stored
// meanwhile by anyone is never overwritten. The lane waits for the
// rebuild as it waits for a cache miss's.
func (w *Worker) repairSnapshot(ctx context.Context, id, subject string) (repaired bool, err error) {
	if !w.owned.owns(id) {
		return false, errNotOwned
	}
	l := w.lanes.pick(id)
	done := make(chan struct{})
	if err := w.lanes.barrier(l, func() {
		defer close(done)
		repaired, err = w.repairOnLane(ctx, l, id, subject)
	}); err != nil {
		return false, err
	}
	select {
	case <-done:
		return repaired, err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// repairOnLane is repairSnapshot's work, on l.
func (w *Worker) repairOnLane(ctx context.Context, l *lane, id, subject string) (bool, error) {
	if l.cache.Peek(id) != nil || l.loads[id] != nil {
		return false, nil
	}
	head, rev, err := w.readHead(ctx, id, read.Leader)
	if err != nil {
		return false, err
	}
	last, err := w.stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return false, fmt.Errorf("worker: last event of %s: %w", id, err)
	}
	if rev != 0 && head.Sequence >= last.Sequence {
		return false, nil // stored meanwhile
	}
	// From the checkpoint even when no snapshot is stored: the events it
	// covers may be compacted out of the stream.
	r, err := w.rebuild(ctx, id, last.Sequence+1, true)
	if err != nil {
		return false, err
	}
	value, err := encodeRebuilt(newState(r, last.Sequence, head, rev))
	if err != nil {
		return false, fmt.Errorf("worker: rebuild %s: %w", id, err)
	}
	if limit := w.snapshots.snapshotLimit(id); len(value) > limit {
		return false, fmt.Errorf("worker: rebuilt snapshot of %s is %d bytes, over the limit of %d", id, len(value), limit)
	}
	if _, err := w.snapshots.writeSnapshot(ctx, id, value, rev); err != nil {
		return false, err
	}
	return true, nil
}

// encodeRebuilt encodes the snapshot of a state just rebuilt, as a store
// encodes it (beginStore): the flat list's entries, with the live replies'
// text spliced in, and the context tree.
func encodeRebuilt(st *convState) ([]byte, error) {
	flat, err := st.conv.FlatList()
	if err != nil {
		return nil, err
	}
	delta, err := diffFlat(nil, flat)
	if err != nil {
		return nil, err
	}
	st.flatJSON.replace(flat, 0, delta)
	st.flat = flat
	tree, err := st.conv.ContextTree()
	if err != nil {
		return nil, err
	}
	return encodeSnapshotOf(nil, st.id, st.version, st.seq, liveEntries(st, st.flatJSON.entries(st.flat, 0)), tree)
}

// settledFloors returns the acknowledgement floor (a stream sequence) of
// each of the worker's consumers, by partition: every event of theirs at
// or below it was applied, refused or dead-lettered. ok is false when a
// consumer cannot be read.
func (w *Worker) settledFloors(ctx context.Context) (floors []uint64, ok bool) {
	cons := w.consumers.Load()
	if cons == nil {
		return nil, false
	}
	for _, c := range *cons {
		info, err := c.Info(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				w.cfg.logger.WarnContext(ctx, "snapshot audit not run: reading a consumer", "err", err)
			}
			return nil, false
		}
		floors = append(floors, info.AckFloor.Stream)
	}
	return floors, len(floors) > 0
}

// auditReport is the /readyz line about the last audit's finding, if any.
func (w *Worker) auditReport() string {
	if p := w.audit.report.Load(); p != nil {
		return "storage damaged: " + *p + "\n"
	}
	return ""
}
