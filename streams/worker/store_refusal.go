package worker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// A snapshot write that fails for a reason no retry changes (its
// conversation's context tree cannot be built, its JSON cannot be written,
// it is over what can be stored) is refused: retried, it held its events
// unacknowledged for ever, and once they filled the consumer's
// MaxAckPending no other conversation was served. The events are normally
// refused before that, when applied (store_limits.go,
// TestDeepConversationDoesNotStallWorker); a refused store means their
// bounds let one through, or the server's limit is lower than the worker
// knew (TestStoreRefusedBySize). Its events are then asked for again
// and applied measured, each against the limits, so that the one that
// breaks a limit is rejected as it would have been; should the store be
// refused again all the same, they are terminated, each with a rejection
// on the errors subject. Either way the conversation is marked degraded
// (store_degraded.go), keeps its last stored state, and nothing is retried for
// ever.

// errUnbuildable and errUnencodable mark a snapshot whose context tree
// cannot be built or whose JSON cannot be written: the same state fails
// the same way every time.
var (
	errUnbuildable = errors.New("worker: snapshot: context tree")
	errUnencodable = errors.New("worker: snapshot: encode")
)

// jsMessageTooLarge is the JetStream API error code of a message over the
// stream's maximum message size.
const jsMessageTooLarge = 10054

// storeRefusal returns the rejection a failed snapshot write stands for
// when no retry changes it; nil for a failure that may pass (the server
// away, a timeout, a conflict).
func storeRefusal(err error) *streams.RejectError {
	var re *streams.RejectError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re), errors.Is(err, errUnbuildable), errors.Is(err, errUnencodable):
		return streams.RejectionOf(err)
	case serverTooLarge(err):
		return streams.RejectErr(streams.CodeSnapshotTooLarge, err)
	}
	return nil
}

// serverTooLarge reports whether err is the server's (or nats.go's, on
// its behalf) refusal of a message for its size.
func serverTooLarge(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) || errors.As(err, &api) && api.ErrorCode == jsMessageTooLarge
}

// refuseStore settles a write of st that no retry stores (see above): the
// first time, its events are asked for again, to be applied measured; when
// they were measured already, they are terminated. Either way st is let
// go, and with it the events after the write's. It runs on the lane, from
// stored.
func (s *snapshotStore) refuseStore(ctx context.Context, l *lane, st *convState, b *storeBatch) {
	re := storeRefusal(b.err)
	if serverTooLarge(b.err) {
		// The bucket's limit is lower than the worker knew (an operator
		// lowered it): later events are measured against it as it is now,
		// and in any case against what was refused.
		s.cap.refusedAt(int(st.snapshotBytes))
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := s.cap.readBucket(sctx, s.kv); err != nil {
			s.logger.WarnContext(ctx, "snapshot bucket status not read", "err", err)
		}
		cancel()
	}
	again := s.degraded.refused(st.id, b.seq, st.seq, re)
	log := s.logger
	if !again {
		log.ErrorContext(ctx, "snapshot cannot be stored; its events will be applied again, each measured against the limits",
			"conversation", st.id, "version", b.version, "code", re.Code, "events", len(b.msgs), "err", b.err)
		s.hooks.nak(b.msgs)
	} else {
		log.ErrorContext(ctx, "snapshot cannot be stored although its events were measured; terminating them",
			"conversation", st.id, "version", b.version, "code", re.Code, "events", len(b.msgs), "err", b.err)
		s.hooks.terminate(ctx, st.id, b.msgs, re)
	}
	if s.hooks.holds(l, st) {
		s.hooks.drop(l, st) // which asks for its unstored events again
	} else if q := st.store; q != nil {
		s.hooks.nak(q.unstored)
		q.unstored, st.unstoredBytes = nil, 0
	}
}

// termBody is the body of a termination, as jetstream.Msg.Term sends it.
var termBody = []byte("+TERM")

// terminateAll terminates the events acks of conversation id, each
// reported on the errors subject as refused for re and removed from the
// events stream (so that a rebuild leaves it out), as the rejection
// middleware does. One whose report cannot be published is asked for
// again instead: nothing is terminated without its record.
func (w *Worker) terminateAll(ctx context.Context, id string, acks []pendingAck, re *streams.RejectError) {
	for _, a := range acks {
		w.progress.settled(a)
		seq, ok := ackSequence(a)
		if !ok {
			w.cfg.logger.ErrorContext(ctx, "terminating an event: no sequence in its ack subject", "ack_subject", string(a))
			continue
		}
		rej := streams.EventRejected{Subject: w.eventSubject(id), Reason: re.Reason, Code: re.Code, ConversationID: id, Sequence: seq}
		if err := w.reports.rejection(ctx, "rejected:"+strconv.FormatUint(seq, 10), rej); err != nil {
			_ = a.publish(w.nc, nakBody(backoff(2)))
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := w.stream.DeleteMsg(dctx, seq); err != nil {
			w.cfg.logger.WarnContext(ctx, "terminated event not removed from the stream", "seq", seq, "err", err)
		}
		cancel()
		if err := a.publish(w.nc, termBody); err != nil {
			w.cfg.logger.WarnContext(ctx, "terminating event", "seq", seq, "err", err)
		}
	}
}

// ackSequence returns the events-stream sequence in the subject an event
// is acknowledged on: $JS.ACK.<stream>.<consumer>.<delivered>.<seq>.…
// (nine tokens), or with a domain and an account hash after ACK (eleven
// or twelve), as nats.go's jetstream.Msg.Metadata reads it.
func ackSequence(a pendingAck) (uint64, bool) {
	tokens := strings.Split(string(a), ".")
	i := 0
	switch {
	case len(tokens) == 9:
		i = 5
	case len(tokens) >= 11:
		i = 7
	default:
		return 0, false
	}
	seq, err := strconv.ParseUint(tokens[i], 10, 64)
	return seq, err == nil
}
