package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultMaxDeliver is how many times an event is delivered to the
// workers before it is dead-lettered, unless WithMaxDeliver says
// otherwise. A transient failure is redelivered after 100 ms doubling to
// 10 s (backoff), so 100 deliveries are about a quarter of an hour of
// failing: long enough for an election or a restart of NATS, short of
// forever.
const DefaultMaxDeliver = 100

// WithMaxDeliver sets how many times an event is delivered (the
// consumers' MaxDeliver) before it is dead-lettered: reported as
// convstream.event.deadlettered.v1 on its conversation's errors subject,
// and no longer redelivered. Every delivery counts: failures, ack waits
// that ran out (a worker that died holding it), events handed back.
func WithMaxDeliver(n int) Option { return func(c *config) { c.maxDeliver = n } }

// EventDeadLettered is the data of TypeEventDeadLettered: an event
// JetStream stopped delivering after MaxDeliver deliveries that all
// failed for reasons that might have passed (the store or NATS away, a
// worker dying with it), rather than one rejected for what it holds.
type EventDeadLettered struct {
	// EventID is the event's CloudEvent id (or Nats-Msg-Id), null when it
	// cannot be read.
	EventID *string `json:"eventId"`
	// Subject is the events-stream subject the event is stored under, ""
	// when it cannot be read.
	Subject string `json:"subject"`
	// Type is the event's type, when it can be read.
	Type string `json:"type,omitempty"`
	// ConversationID is the conversation concerned, when known.
	ConversationID string `json:"conversationId,omitempty"`
	// Sequence is the event's events-stream sequence.
	Sequence uint64 `json:"sequence"`
	// Deliveries is how many times it was delivered.
	Deliveries uint64 `json:"deliveries"`
	// Consumer is the worker consumer that gave up on it.
	Consumer string `json:"consumer"`
	// Reason is the last failure a worker reported for it, or why none
	// is known.
	Reason string `json:"reason"`
}

// maxDeliveriesAdvisory is the part of JetStream's
// io.nats.jetstream.advisory.v1.max_deliver advisory the worker reads.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// unsettledReason is the reason of a dead letter no worker reported a
// failure for.
const unsettledReason = "its last delivery was not settled within the ack wait (a worker stopped or stalled holding it); no failure was reported"

// failureNotes keeps the last failure reported for events being
// redelivered, by stream sequence, so that a dead letter announced by
// JetStream can name it. It holds at most failureNotesMax; past that the
// oldest notes go (their dead letter, if it comes, says no reason is
// known).
type failureNotes struct {
	mu      sync.Mutex
	reasons map[uint64]string
	order   []uint64
}

const failureNotesMax = 4096

func (f *failureNotes) note(seq uint64, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reasons == nil {
		f.reasons = make(map[uint64]string)
	}
	if _, ok := f.reasons[seq]; !ok {
		if len(f.order) == failureNotesMax {
			delete(f.reasons, f.order[0])
			f.order = f.order[1:]
		}
		f.order = append(f.order, seq)
	}
	f.reasons[seq] = reason
}

func (f *failureNotes) reason(seq uint64) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.reasons[seq]
	return r, ok
}

// lastDelivery reports whether d is the last delivery its consumer makes.
func (w *Worker) lastDelivery(d *delivery) bool {
	return w.cfg.maxDeliver > 0 && d.delivered >= uint64(w.cfg.maxDeliver)
}

// deadLetterFailed records d, which failed on its last delivery with err,
// as dead-lettered. When the record cannot be stored the caller hands the
// event back; JetStream then announces it, and the announcement is
// recorded instead (deadLetterAnnounced).
func (w *Worker) deadLetterFailed(ctx context.Context, d *delivery, err error) error {
	dl := EventDeadLettered{
		Subject:        d.subject,
		ConversationID: d.conversationID,
		Sequence:       d.seq,
		Deliveries:     d.delivered,
		Consumer:       consumerOf(d.msg),
		Reason:         err.Error(),
	}
	if d.eventID != "" {
		dl.EventID = &d.eventID
	}
	if d.event != nil {
		dl.Type = d.event.Type()
	}
	return w.storeDeadLetter(ctx, dl)
}

// consumerOf names the consumer m was delivered by.
func consumerOf(m jetstream.Msg) string {
	if meta, err := m.Metadata(); err == nil {
		return meta.Consumer
	}
	return ""
}

// watchDeadLetters subscribes to the max-deliveries advisories of the
// events stream until ctx ends, recording each of the worker's consumers
// as a dead letter. With pull consumers JetStream gives up on an event
// only when a worker asks for more, so a worker that subscribes before it
// pulls hears every one of its own. Workers share the advisories in a
// queue group; a record stored twice is deduplicated by its id.
func (w *Worker) watchDeadLetters(ctx context.Context) (*nats.Subscription, error) {
	subject := streams.MaxDeliveriesAdvisory(w.cfg.subjects.EventsStream())
	sub, err := w.nc.QueueSubscribe(subject, w.cfg.consumer, func(m *nats.Msg) {
		var adv maxDeliveriesAdvisory
		if err := json.Unmarshal(m.Data, &adv); err != nil {
			w.cfg.logger.ErrorContext(ctx, "max-deliveries advisory not readable", "subject", m.Subject, "err", err)
			return
		}
		if adv.Consumer != w.cfg.consumer && !strings.HasPrefix(adv.Consumer, w.cfg.consumer+"-p") {
			return // another application's consumer of the stream
		}
		if err := w.deadLetterAnnounced(ctx, adv); err != nil {
			w.cfg.logger.ErrorContext(ctx, "dead letter not recorded", "seq", adv.StreamSeq, "consumer", adv.Consumer, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("worker: subscribe %s: %w", subject, err)
	}
	return sub, nil
}

// deadLetterAnnounced records an event JetStream announced it gave up on,
// reading what it can of the event from the stream.
func (w *Worker) deadLetterAnnounced(ctx context.Context, adv maxDeliveriesAdvisory) error {
	dl := EventDeadLettered{Sequence: adv.StreamSeq, Deliveries: adv.Deliveries, Consumer: adv.Consumer, Reason: unsettledReason}
	if r, ok := w.failures.reason(adv.StreamSeq); ok {
		dl.Reason = r
	}
	gctx, cancel := context.WithTimeout(ctx, reportTimeout)
	raw, err := w.stream.GetMsg(gctx, adv.StreamSeq)
	cancel()
	switch {
	case err == nil:
		dl.Subject = raw.Subject
		if id, ok := w.cfg.subjects.StoredConversationOf(raw.Subject, w.partitions()); ok {
			dl.ConversationID = id
		}
		if ev, decErr := streams.DecodeEvent(raw.Header, raw.Data); decErr == nil {
			id := ev.ID()
			dl.EventID, dl.Type = &id, ev.Type()
		} else if id := raw.Header.Get(jetstream.MsgIDHeader); id != "" {
			dl.EventID = &id
		}
	case errors.Is(err, jetstream.ErrMsgNotFound):
		dl.Reason += "; the event is no longer in the stream"
	default:
		dl.Reason += "; the event could not be read: " + err.Error()
	}
	return w.storeDeadLetter(ctx, dl)
}

// storeDeadLetter publishes dl on its conversation's errors subject (or
// that of UnknownConversation) and waits until the errors stream has it.
func (w *Worker) storeDeadLetter(ctx context.Context, dl EventDeadLettered) error {
	conv := dl.ConversationID
	if conv == "" {
		conv = streams.UnknownConversation
	}
	ev, err := streams.NewEvent("deadlettered:"+strconv.FormatUint(dl.Sequence, 10), streams.TypeEventDeadLettered, w.cfg.source, dl.ConversationID, dl)
	if err != nil {
		return err
	}
	streams.InjectTraceContext(ctx, ev)
	msg, err := streams.EncodeEvent(w.cfg.subjects.Errors(conv), ev, streams.Structured)
	if err != nil {
		return err
	}
	dup, err := w.reports.storeOnce(ctx, msg)
	if err != nil {
		return err
	}
	if dup { // recorded already, by the worker that failed it or by the advisory
		return nil
	}
	w.metrics.deadLetters.Add(ctx, 1)
	w.cfg.logger.ErrorContext(ctx, "event dead-lettered: delivered the most times allowed without being applied",
		"subject", dl.Subject, "conversation", dl.ConversationID, "seq", dl.Sequence, "deliveries", dl.Deliveries,
		"consumer", dl.Consumer, "reason", dl.Reason)
	return nil
}
