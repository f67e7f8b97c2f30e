package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSnapshotInterval is how often, at most, the full snapshot of a
// conversation is written to the snapshot bucket.
const DefaultSnapshotInterval = 50 * time.Millisecond

// deferAck holds the acknowledgement of a delivery whose delta was published
// until a store covers it, and makes sure one is due. It runs on the lane.
func (w *Worker) deferAck(ctx context.Context, d *delivery) {
	st := d.state
	st.unstored = append(st.unstored, d.msg)
	if st.storing {
		return
	}
	wait := time.Until(st.lastStore.Add(w.cfg.snapshotInterval))
	if wait <= 0 && w.cfg.snapshotInterval == 0 {
		w.store(ctx, d.lane, st)
		return
	}
	st.storing = true
	l := d.lane
	time.AfterFunc(max(wait, 0), func() {
		// Refused only once the lanes are shut down, after the final store.
		_ = w.lanes.do(ctx, l, func() { w.store(ctx, l, st) })
	})
}

// store writes the full snapshot of st to the bucket, when its version is
// not stored yet and the lane still holds it, and acknowledges the events
// it covers. A failure lets the state go, which asks for those events
// again. It runs on the lane.
func (w *Worker) store(ctx context.Context, l *lane, st *convState) {
	st.storing = false
	if len(st.unstored) == 0 || l.cache.peek(st.id) != st {
		return
	}
	err := w.storeSnapshot(ctx, st)
	if tooLarge(err) {
		// Too large to store: the events took effect and their deltas are
		// out; the bucket keeps the last snapshot that fitted.
		w.cfg.logger.ErrorContext(ctx, "snapshot not stored", "conversation", st.id, "version", st.version, "err", err)
		w.ack(ctx, st)
		return
	}
	if err != nil {
		w.cfg.logger.WarnContext(ctx, "snapshot not stored; its events will be redelivered",
			"conversation", st.id, "version", st.version, "err", err)
		l.cache.drop(st.id)
		return
	}
	w.ack(ctx, st)
}

// storeSnapshot encodes the snapshot of st's current version and writes it
// with a compare-and-set on the key's revision.
func (w *Worker) storeSnapshot(ctx context.Context, st *convState) error {
	res, err := st.conv.Result()
	if err != nil {
		return fmt.Errorf("streams: snapshot: %w", err)
	}
	value, err := encodeSnapshot(st.id, st.version, st.seq, res)
	if err != nil {
		return fmt.Errorf("streams: encode snapshot: %w", err)
	}
	if limit := w.maxSnapshotBytes(); len(value) > limit {
		return reject(CodeSnapshotTooLarge, "the snapshot would be %d bytes, over the limit of %d", len(value), limit)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rev uint64
	if st.rev == 0 {
		rev, err = w.kv.Create(ctx, st.id, value)
	} else {
		rev, err = w.kv.Update(ctx, st.id, value, st.rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w: %s: %w", errConflict, st.id, err)
	}
	if err != nil {
		return fmt.Errorf("streams: store snapshot: %w", err)
	}
	st.rev, st.storedVersion, st.storedSeq, st.lastStore = rev, st.version, st.seq, time.Now()
	return nil
}

// release is called on the lane with every state the lane lets go of. A
// state evicted for room is stored first when it has events not stored
// (it is sound); one dropped as invalid, or whose store fails, asks for
// those events again, soon, so that a rebuild applies and stores them.
func (w *Worker) release(st *convState, evicted bool) {
	if len(st.unstored) == 0 {
		return
	}
	if evicted {
		err := w.storeSnapshot(context.Background(), st)
		if err == nil || tooLarge(err) {
			w.ack(context.Background(), st)
			return
		}
		w.cfg.logger.Warn("snapshot of an evicted conversation not stored; its events will be redelivered",
			"conversation", st.id, "version", st.version, "err", err)
	}
	for _, m := range st.unstored {
		_ = m.NakWithDelay(backoff(1))
	}
	st.unstored = nil
}

// ack acknowledges the events a store covered.
func (w *Worker) ack(ctx context.Context, st *convState) {
	for _, m := range st.unstored {
		if err := m.Ack(); err != nil {
			w.cfg.logger.WarnContext(ctx, "acknowledging event", "subject", m.Subject(), "err", err)
		}
	}
	clear(st.unstored)
	st.unstored = st.unstored[:0]
}

// storeAll stores, on every lane, each conversation with events not stored
// yet: the last step of a graceful stop, after the lanes ran what was
// fetched.
func (w *Worker) storeAll(ctx context.Context) {
	for _, l := range w.lanes.all {
		err := w.lanes.call(ctx, l, func() {
			var due []*convState
			l.cache.each(func(st *convState) {
				if len(st.unstored) > 0 {
					due = append(due, st)
				}
			})
			for _, st := range due {
				w.store(ctx, l, st)
			}
		})
		if err != nil {
			w.cfg.logger.WarnContext(ctx, "storing snapshots on stop", "err", err)
		}
	}
}

// tooLarge reports whether a store failed because the snapshot is over the
// size limit, which no retry changes.
func tooLarge(err error) bool {
	var re *RejectError
	return errors.As(err, &re) && re.Code == CodeSnapshotTooLarge
}
