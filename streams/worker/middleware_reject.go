package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/convstream/convstream/streams"
)

// reportRejection publishes a rejection on the errors subject under event
// id id and waits until the errors stream has stored it (reports.rejection).
type reportRejection func(ctx context.Context, id string, rej streams.EventRejected) error

// deleteEvent removes the event at seq from the events stream (the
// stream's DeleteMsg, once Run has provisioned it).
type deleteEvent func(ctx context.Context, seq uint64) error

// limitMarker holds a conversation at a limit once one of its events is
// refused for it (degradedSet.mark).
type limitMarker interface {
	mark(id string, seq uint64, re *streams.RejectError)
}

// rejection returns the poison-message middleware: a *RejectError from the
// stages is reported as convstream.event.rejected.v1 on the errors subject
// (report), the event is removed from the events stream (remove, so that a
// rebuild never meets it, whatever the limits are then), a conversation
// refused at a limit is marked degraded, and the delivery is settled as
// rejected, which terminates it. Publishing the report is the only step
// that can fail; then the event is redelivered and refused again
// (TestRejections, TestHostileSuite).
func rejection(report reportRejection, remove deleteEvent, degraded limitMarker, log *slog.Logger) middleware {
	return func(next handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivery) error {
			err := next(ctx, d)
			var re *streams.RejectError
			if !errors.As(err, &re) {
				return err
			}
			if d.dirty {
				// Refused after the state changed (the snapshot was too
				// large): the event is taken back (handler_undo.go), or the state
				// forgotten; the rebuild will not see the deleted event.
				if d.state != nil && d.undo.apply(d.state.conv, d.state.live) {
					d.lane.cache.Resize(d.state)
				} else {
					d.lane.cache.Drop(d.conversationID)
				}
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
			if err := report(ctx, "rejected:"+strconv.FormatUint(d.seq, 10), rej); err != nil {
				return err
			}
			if re.Code.Degrades() && d.conversationID != "" {
				degraded.mark(d.conversationID, d.seq, re)
			}
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := remove(dctx, d.seq); err != nil {
				log.WarnContext(ctx, "rejected event not removed from the stream", "seq", d.seq, "err", err)
			}
			cancel()
			d.outcome = rejected
			return fmt.Errorf("%w: %w", streams.ErrRejected, re)
		}
	}
}
