package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/convstream/convstream/streams"
)

// errConflict is a transient failure: another writer changed the stored
// snapshot since this worker loaded the conversation.
var errConflict = errors.New("worker: snapshot changed by another writer")

// publish publishes what the event changed in the flat list as a
// SnapshotDelta on the snapshots subject, and leaves the full snapshot to
// the coalesced store (store_write.go): the event is acknowledged once a store
// covers it, so a failure before that applies and publishes it again.
// Its cost is that of the flat list's changed tail, not of the
// conversation.
func (w *Worker) publish(ctx context.Context, d *delivery) error {
	if d.event.Type() == streams.TypeMessageChunk {
		return w.publishChunk(ctx, d)
	}
	return w.publishFlat(ctx, d)
}

// publishFlat publishes the difference between the flat list published
// last and the conversation's.
func (w *Worker) publishFlat(ctx context.Context, d *delivery) error {
	st := d.state
	flat, err := st.conv.FlatList()
	if err != nil {
		return streams.RejectionOf(err)
	}
	var delta flatDelta
	if st.flat == nil {
		delta, err = diffFlat(nil, flat)
	} else {
		delta, err = diffFlat(st.flat, flat)
	}
	if err != nil {
		return fmt.Errorf("worker: encode snapshot delta: %w", err)
	}
	flatBytes := int(st.flatBytes)
	if st.flat != nil {
		replaced := len(st.flat) - delta.keep - delta.from
		for raw := range st.flatJSON.entries(st.flat, delta.from) {
			if replaced == 0 {
				break
			}
			flatBytes -= len(raw) + 1
			replaced--
		}
	}
	flatBytes += delta.size()
	if err := w.snapshots.checkSnapshotLimits(st, d, flatBytes); err != nil {
		return err
	}

	version := d.seq // see convState.version
	msg := deltaMsg(ctx, &d.lane.delta, w.cfg.subjects.Snapshots(st.id), w.cfg.source, deltaID(st.id, version), st.id, time.Now(),
		deltaSize(st.id, delta), func(b []byte) []byte { return encodeDelta(b, st.id, version, st.version, d.seq, len(flat), delta) })
	if n := len(msg.Data) + headerSize(msg.Header); n > int(w.nc.MaxPayload()) {
		return streams.Reject(streams.CodeSnapshotTooLarge, "the snapshot delta event would be %d bytes, over the server's max payload of %d", n, w.nc.MaxPayload())
	}
	if err := w.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("worker: publish snapshot delta: %w", err)
	}

	st.flatJSON.replace(flat, len(st.flat), delta) // with no flat list before, delta.from is 0
	// flatBytes is within the snapshot limit, checked above: an int32.
	st.version, st.seq, st.flat, st.flatBytes = version, d.seq, flat, int32(flatBytes)
	st.events++
	st.sinceCheckpoint.add(d.size)
	st.sinceCheckpoint.addSeq(d.seq)
	d.lane.cache.Resize(st)
	d.dirty = false
	d.version = version
	d.outcome = applied
	d.unstored = true
	if !d.stored.IsZero() {
		lag := time.Since(d.stored)
		w.metrics.snapshotLatency(ctx, lag)
		// A hot conversation's backlog stretched every conversation's
		// snapshot interval to its maximum (TestHotConversationDoesNotHoldOthers).
		w.snapshots.observeLag(lag - d.behind)
	}
	return nil
}
