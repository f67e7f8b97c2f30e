package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// reports writes what the worker reports on the errors subjects
// (rejections, pipeline failures, dead letters) and waits until the errors
// stream has stored each: the one writer the rejection middleware, the
// store's refusals and the inference server share, so that every report is
// durable the same way (TestStoredErrorsReadLater).
type reports struct {
	js       jetstream.JetStream
	subjects streams.Subjects
	source   string // the CloudEvents source of the reports
	log      *slog.Logger
}

// store publishes msg, a report on an errors subject, and waits until the
// errors stream has stored it. Subscribers of the subject get it as any
// other message.
func (r *reports) store(ctx context.Context, msg *nats.Msg) error {
	_, err := r.storeOnce(ctx, msg)
	return err
}

// storeOnce is store, and says whether the errors stream had the record
// already (the same id, within its duplicate window).
func (r *reports) storeOnce(ctx context.Context, msg *nats.Msg) (duplicate bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	ack, err := r.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(r.subjects.ErrorsStream()))
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && errorsStreamFull(apiErr.ErrorCode) {
		// The stream keeps what it holds rather than let this record push
		// out other conversations' (errorsStreamConfig); the subject's
		// subscribers still get it.
		r.log.WarnContext(ctx, "report not kept: the errors stream is full", "subject", msg.Subject,
			"id", msg.Header.Get(jetstream.MsgIDHeader), "err", err)
		if pErr := r.js.Conn().PublishMsg(msg); pErr != nil {
			return false, fmt.Errorf("worker: publish %s on %s: %w", msg.Header.Get(jetstream.MsgIDHeader), msg.Subject, pErr)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("worker: store %s on %s: %w", msg.Header.Get(jetstream.MsgIDHeader), msg.Subject, err)
	}
	return ack.Duplicate, nil
}

// rejection publishes rej on the errors subject of its conversation (or of
// UnknownConversation) and waits until the errors stream has stored it.
func (r *reports) rejection(ctx context.Context, id string, rej streams.EventRejected) error {
	conv := rej.ConversationID
	if conv == "" {
		conv = streams.UnknownConversation
	}
	ev, err := streams.NewEvent(id, streams.TypeEventRejected, r.source, rej.ConversationID, rej)
	if err != nil {
		return err
	}
	streams.InjectTraceContext(ctx, ev)
	msg, err := streams.EncodeEvent(r.subjects.Errors(conv), ev, streams.Structured)
	if err != nil {
		return err
	}
	// Stored, so that a client not listening now can read it later.
	if err := r.store(ctx, msg); err != nil {
		return fmt.Errorf("worker: publish rejection: %w", err)
	}
	r.log.InfoContext(ctx, "event rejected", "subject", rej.Subject, "conversation", rej.ConversationID,
		"code", rej.Code, "reason", rej.Reason, "seq", rej.Sequence)
	return nil
}

// failure reports a failed pipeline run on the conversation's errors
// subject too, where it is kept (the reply and P.results.<id> reach only
// those listening at the time).
func (r *reports) failure(ctx context.Context, id string, failed streams.PipelineFailed) {
	ev, err := streams.NewEvent(id, streams.TypePipelineFailed, r.source, failed.ConversationID, failed)
	var msg *nats.Msg
	if err == nil {
		streams.InjectTraceContext(ctx, ev)
		msg, err = streams.EncodeEvent(r.subjects.Errors(failed.ConversationID), ev, streams.Structured)
	}
	if err == nil {
		err = r.store(ctx, msg)
	}
	if err != nil {
		r.log.WarnContext(ctx, "pipeline failure not stored", "conversation", failed.ConversationID, "err", err)
	}
}
