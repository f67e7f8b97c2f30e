package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// sweepOrphanReplies completes, as interrupted, the replies whose writer
// went silent while no lane of this worker held their conversation: the
// worker that applied their chunks let the conversation go from its cache,
// stopped, or lost its partition, and no event since brought it back to a
// lane, so watchReplies never sees them. The events stream is their index:
// it holds a conversation's chunks until its reply completes. A
// conversation whose last chunk is older than the idle timeout, whose
// stored snapshot covers that chunk (else its owner has yet to apply it
// and will watch it), and that this worker does not watch, is loaded as
// stored and each of its replies with chunks completed with what was
// written. Every
// worker sweeps every partition, owned or not (a partition no event came
// to since a restart has no owner): the completion's event id is the same
// whoever writes it, so the stream keeps one (TestLiveReplyOrphanInterrupted).
func (w *Worker) sweepOrphanReplies(ctx context.Context, idle time.Duration) {
	info, err := w.stream.Info(ctx, jetstream.WithSubjectFilter(w.cfg.subjects.AllChunks()))
	if err != nil {
		if ctx.Err() == nil {
			w.cfg.logger.DebugContext(ctx, "listing reply chunks", "err", err)
		}
		return
	}
	watched := w.replies.snapshot()
	for subject := range info.State.Subjects {
		id, chunk, ok := w.cfg.subjects.StoredKindOf(subject, w.partitions())
		if !ok || !chunk {
			continue
		}
		if _, ok := watched[id]; ok {
			continue // a lane holds it: watchReplies times it out
		}
		last, err := w.stream.GetLastMsgForSubject(ctx, subject)
		if err != nil || time.Since(last.Time) < idle {
			continue
		}
		st, err := w.loadForRead(ctx, id)
		if err != nil || st.seq < last.Sequence {
			continue
		}
		if len(st.live) == 0 {
			// Completed, and the purge that followed failed.
			w.purgeChunks(ctx, id, last.Sequence+1)
			continue
		}
		for mid, r := range st.live {
			// A reply with no chunk yet may have begun since the last
			// chunk (another's): its writer's redelivered request ends it.
			if r.seq > 0 {
				w.publishCompletion(ctx, id, interrupted(st.conv, mid, r))
			}
		}
	}
}
