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
	d.data, d.message = data, m
	return nil
}
