package worker

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// decode reads a JetStream message into a delivery: where it came from, its
// conversation, and its CloudEvent. Like a router's unmarshaler it never
// fails; what it cannot read is recorded in decodeErr for validate to refuse,
// so that tracing and rejection see every message.
func (w *Worker) decode(m jetstream.Msg) *delivery {
	d := &delivery{msg: m, subject: m.Subject(), received: time.Now()}
	if meta, err := m.Metadata(); err == nil {
		d.seq = meta.Sequence.Stream
		d.stored = meta.Timestamp
		d.delivered = meta.NumDelivered
	}
	w.decodeInto(d, m.Headers(), m.Data(), w.cfg.limits.MaxEventBytes)
	return d
}

// decodeStored decodes an event read from the stream by sequence (a
// rebuild), as decode does a delivered one, but whatever its size: an
// event still in the stream passed the size limit when it was delivered
// (one refused is removed from the stream), and a limit lowered since
// applies to new events, not to what was accepted. A rebuild under a
// lower limit left such a message out of the conversation without a word
// (TestLowerEventLimitKeepsStored).
func (w *Worker) decodeStored(m *jetstream.RawStreamMsg) *delivery {
	d := &delivery{subject: m.Subject, seq: m.Sequence, stored: m.Time, received: time.Now()}
	w.decodeInto(d, m.Header, m.Data, 0)
	return d
}

// decodeInto fills d from an event's headers and data, refusing one over
// maxBytes (0: any size).
func (w *Worker) decodeInto(d *delivery, h nats.Header, data []byte, maxBytes int) {
	d.size = len(data) + headerSize(h)
	// The publisher sets Nats-Msg-Id to the event id; it names the event in
	// a rejection when the event itself cannot be read.
	d.eventID = h.Get(jetstream.MsgIDHeader)

	id, ok := w.cfg.subjects.StoredConversationOf(d.subject, w.partitions())
	if ok {
		d.conversationID = id
	}
	if maxBytes > 0 && d.size > maxBytes {
		d.decodeErr = streams.Reject(streams.CodeTooLarge, "event of %d bytes is over the limit of %d", d.size, maxBytes)
		return
	}
	ev, err := streams.DecodeEvent(h, data)
	if ev != nil && ev.ID() != "" {
		d.eventID = ev.ID()
	}
	switch {
	case !ok:
		d.decodeErr = streams.Reject(streams.CodeBadSubject, "subject %q does not end in a conversation id matching [A-Za-z0-9_-]{1,128}", d.subject)
	case err != nil:
		var ae *streams.AttributeError
		if errors.As(err, &ae) {
			d.decodeErr = streams.RejectAt(streams.CodeNotCloudEvent, ae.Attr, "%s", ae.Msg)
			break
		}
		d.decodeErr = streams.Reject(streams.CodeNotCloudEvent, "not a CloudEvent: %v", err)
	default:
		d.event = ev
	}
}

// headerSize approximates the wire size of NATS headers.
func headerSize(h nats.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // ": " and CRLF
		}
	}
	return n
}

// validate checks what decode read against the contract (CheckEvent). On
// success d.data holds the decoded data, or d.message an append's message.
func (w *Worker) validate(_ context.Context, d *delivery) error {
	if d.decodeErr != nil {
		return d.decodeErr
	}
	data, m, rej := streams.CheckEvent(d.event, d.conversationID)
	if rej != nil {
		return rej
	}
	// Chunks come on the chunks subject only, and only chunks do.
	if _, chunk, _ := w.cfg.subjects.StoredKindOf(d.subject, w.partitions()); chunk != (d.event.Type() == streams.TypeMessageChunk) {
		return streams.Reject(streams.CodeUnknownType, "event type %q is not accepted on %s", d.event.Type(), d.subject)
	}
	d.data, d.message = data, m
	return nil
}
