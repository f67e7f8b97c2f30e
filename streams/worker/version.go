package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/convstream/convstream/streams"
)

// Every form the worker stores carries its version: a snapshot its
// "format" (streams.SnapshotFormat, store_encode.go), a checkpoint its
// format (checkpointFormat, checkpoint.go); events carry theirs in their
// CloudEvents type. A worker reads the forms of the release before its own
// and refuses newer ones with streams.ErrNewerFormat rather than misread
// them (TestSnapshotFormats, TestCheckpointFormats). A newer checkpoint
// only costs a replay; a newer snapshot leaves its conversation's event
// unapplied and redelivered, which is what a fleet part-way through an
// upgrade shows: the worker says so here, in a warning and a line on
// /readyz, so that the operator finishes the roll (TestNewerSnapshotReported).

// newerForm is a form of a newer release met: when, and what.
type newerForm struct {
	at  time.Time
	msg string
}

// noteNewerForm records err when it is a form of a newer release met for
// conversation id, and warns about it at most once a minute.
func (w *Worker) noteNewerForm(ctx context.Context, id string, err error) {
	if !errors.Is(err, streams.ErrNewerFormat) {
		return
	}
	now := time.Now().UTC()
	prev := w.newerForm.Swap(&newerForm{at: now, msg: fmt.Sprintf("conversation %s: %v", id, err)})
	if prev != nil && now.Sub(prev.at) < time.Minute {
		return
	}
	w.cfg.logger.WarnContext(ctx, "stored form of a newer release; its conversation waits for a newer worker",
		"conversation", id, "err", err)
}

// newerFormReport is the /readyz line about the last form of a newer
// release met, if any.
func (w *Worker) newerFormReport() string {
	if p := w.newerForm.Load(); p != nil {
		return "newer release: " + p.at.Format(time.RFC3339) + " " + p.msg +
			"; finish rolling the workers forward to the release that wrote it\n"
	}
	return ""
}
