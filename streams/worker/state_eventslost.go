package worker

import (
	"context"
	"fmt"
	"time"
)

// The events stream is the source of truth, and a stored snapshot says
// which of its events last changed the conversation (its version). A
// rebuild that finds no event there (the stream's files lost or truncated,
// its limits or an operator removing events the snapshot covers) rebuilds
// what the stream still holds, and the loss is reported instead of
// silently served: an error log, convstream.storage.damaged with what
// events, and a line on /readyz (TestEventsLostReported). A reply's chunks,
// removed from the stream once it completes, can look the same after a
// crash between the two; its completion carries the whole message.

// checkEventsKept reports events of conversation id that its stored
// snapshot head covers but the rebuild r did not find.
func (w *Worker) checkEventsKept(ctx context.Context, id string, head snapshotHead, r *replay) {
	if head.Version == 0 || r.last >= head.Version {
		return
	}
	w.metrics.storageDamaged(ctx, "events")
	msg := fmt.Sprintf("events stream lost events of conversation %s: its stored snapshot was changed last by event %d, the stream holds none after %d",
		id, head.Version, r.last)
	w.cfg.logger.ErrorContext(ctx, "events stream lost events a stored snapshot covers; rebuilt from what it holds",
		"conversation", id, "snapshot_version", head.Version, "rebuilt_version", r.last)
	line := time.Now().UTC().Format(time.RFC3339) + " " + msg
	w.eventsLost.Store(&line)
}

// eventsLostReport is the /readyz line about the last loss found, if any.
func (w *Worker) eventsLostReport() string {
	if p := w.eventsLost.Load(); p != nil {
		return "storage damaged: " + *p + "\n"
	}
	return ""
}
