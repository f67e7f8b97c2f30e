package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errConflict is a transient failure: another writer changed the stored
// snapshot since this worker loaded the conversation.
var errConflict = errors.New("streams: snapshot changed by another writer")

// publish parses the conversation, publishes the snapshot on the snapshots
// subject and stores it in the snapshot bucket, in that order: a failure
// between the two leaves the event unacknowledged, so it is applied and
// published again rather than stored and never published.
func (w *Worker) publish(ctx context.Context, d *delivery) error {
	st := d.state
	res, err := st.conv.Result()
	if err != nil {
		return conversationReject(err)
	}
	version := st.version + 1
	value, err := encodeSnapshot(st.id, version, d.seq, res)
	if err != nil {
		return fmt.Errorf("streams: encode snapshot: %w", err)
	}
	if limit := w.maxSnapshotBytes(); len(value) > limit {
		return reject(CodeSnapshotTooLarge, "the snapshot would be %d bytes, over the limit of %d", len(value), limit)
	}

	id := "snapshot:" + st.id + ":" + strconv.FormatUint(version, 10)
	ev, err := newEvent(id, TypeSnapshotUpdated, w.cfg.source, st.id, json.RawMessage(value))
	if err != nil {
		return err
	}
	w.inject(ctx, ev)
	msg, err := EncodeEvent(w.cfg.subjects.Snapshots(st.id), ev, Structured)
	if err != nil {
		return err
	}
	if n := len(msg.Data) + headerSize(msg.Header); n > int(w.nc.MaxPayload()) {
		return reject(CodeSnapshotTooLarge, "the snapshot event would be %d bytes, over the server's max payload of %d", n, w.nc.MaxPayload())
	}
	if err := w.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("streams: publish snapshot: %w", err)
	}

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

	st.version, st.seq, st.rev, st.result = version, d.seq, rev, res
	d.dirty = false
	d.version = version
	d.outcome = applied
	if !d.stored.IsZero() {
		w.metrics.snapshotLatency(ctx, time.Since(d.stored))
	}
	return nil
}

// maxSnapshotBytes is the configured limit, or the server's max payload.
func (w *Worker) maxSnapshotBytes() int {
	if l := w.cfg.limits.MaxSnapshotBytes; l > 0 {
		return l
	}
	return int(w.nc.MaxPayload())
}
