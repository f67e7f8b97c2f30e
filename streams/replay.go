package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
)

// replayTimeout bounds one rebuild.
const replayTimeout = time.Minute

// rebuild replays the events of conversation id stored before sequence
// before, through the same decode, validate and apply steps as live events.
// Events that would be refused are skipped silently: they were reported
// when they first arrived. Cost: one message lookup, plus for a
// conversation with history one ordered consumer reading its events.
func (w *Worker) rebuild(ctx context.Context, id string, before uint64) (*conversation.Conversation, error) {
	start := time.Now()
	conv := conversation.NewConversation(conversation.WithMaxMessages(w.cfg.limits.MaxMessages))
	if before <= 1 {
		return conv, nil
	}
	subject := w.eventSubject(id)
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()

	// The first event of the subject tells whether there is anything to
	// replay without creating a consumer (the common case of a new
	// conversation).
	first, err := w.stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return conv, nil
	}
	if err != nil {
		return nil, fmt.Errorf("streams: rebuild %s: %w", id, err)
	}
	if first.Sequence >= before {
		return conv, nil
	}
	cons, err := w.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       first.Sequence,
		InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("streams: rebuild %s: %w", id, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		// Ordered consumers are ephemeral; delete rather than wait for the
		// inactivity threshold, so a burst of rebuilds leaves nothing behind.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer dcancel()
		_ = w.stream.DeleteConsumer(dctx, name)
	}()
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return nil, fmt.Errorf("streams: rebuild %s: %w", id, err)
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("streams: rebuild %s after %d events: %w", id, n, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, fmt.Errorf("streams: rebuild %s: %w", id, err)
		}
		if meta.Sequence.Stream >= before {
			break
		}
		d := w.decode(m)
		if err := w.validate(ctx, d); err == nil {
			_ = applyEvent(conv, d.event.Type(), d.data)
		}
		n++
		if meta.NumPending == 0 {
			break
		}
	}
	w.metrics.rebuilt(ctx, time.Since(start))
	w.cfg.logger.DebugContext(ctx, "conversation rebuilt", "conversation", id, "events", n, "before", before, "elapsed", time.Since(start))
	return conv, nil
}
