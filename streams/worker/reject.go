package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/convstream/convstream/streams"
)

// rejection is the poison-message middleware: a *RejectError from the
// stages is reported as convstream.event.rejected.v1 on the errors subject,
// the event is removed from the events stream (so that a rebuild never
// meets it, whatever the limits are then) and the delivery is settled as
// rejected, which terminates it. Publishing the report is the only step
// that can fail; then the event is redelivered and refused again.
func (w *Worker) rejection(next handlerFunc) handlerFunc {
	return func(ctx context.Context, d *delivery) error {
		err := next(ctx, d)
		var re *streams.RejectError
		if !errors.As(err, &re) {
			return err
		}
		if d.dirty {
			// Refused after the state changed (the snapshot was too large):
			// forget it; the rebuild will not see the deleted event.
			d.lane.cache.drop(d.conversationID)
			d.dirty = false
		}
		rej := streams.EventRejected{
			Subject:        d.subject,
			Reason:         re.Reason,
			Code:           re.Code,
			Path:           re.Path,
			ConversationID: d.conversationID,
			Sequence:       d.seq,
		}
		if d.eventID != "" {
			rej.EventID = &d.eventID
		}
		if d.event != nil {
			rej.Type = d.event.Type()
		}
		if err := w.publishRejection(ctx, "rejected:"+strconv.FormatUint(d.seq, 10), rej); err != nil {
			return err
		}
		if limitCode(re.Code) && d.conversationID != "" {
			w.degraded.mark(d.conversationID, d.seq, re)
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := w.stream.DeleteMsg(dctx, d.seq); err != nil {
			w.cfg.logger.WarnContext(ctx, "rejected event not removed from the stream", "seq", d.seq, "err", err)
		}
		cancel()
		d.outcome = rejected
		return fmt.Errorf("%w: %w", streams.ErrRejected, re)
	}
}

// publishRejection publishes rej on the errors subject of its conversation
// (or of UnknownConversation) and waits until the errors stream has
// stored it.
func (w *Worker) publishRejection(ctx context.Context, id string, rej streams.EventRejected) error {
	conv := rej.ConversationID
	if conv == "" {
		conv = streams.UnknownConversation
	}
	ev, err := streams.NewEvent(id, streams.TypeEventRejected, w.cfg.source, rej.ConversationID, rej)
	if err != nil {
		return err
	}
	w.inject(ctx, ev)
	msg, err := streams.EncodeEvent(w.cfg.subjects.Errors(conv), ev, streams.Structured)
	if err != nil {
		return err
	}
	// Stored, so that a client not listening now can read it later.
	if err := w.storeReport(ctx, msg); err != nil {
		return fmt.Errorf("streams: publish rejection: %w", err)
	}
	w.cfg.logger.InfoContext(ctx, "event rejected", "subject", rej.Subject, "conversation", rej.ConversationID,
		"code", rej.Code, "reason", rej.Reason, "seq", rej.Sequence)
	return nil
}
