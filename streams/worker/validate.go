package worker

import (
	"context"

	"github.com/convstream/convstream/streams"
)

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
