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
// before, through the same decode, validate and apply steps as live events,
// and returns the conversation and the sequence of the last event that
// changed it (its version; 0 when none did). Events that would be refused
// are skipped silently: they were reported when they first arrived. Cost:
// one read from the stream's leader for a new conversation; otherwise a
// count, then one read per event when there are at most replayDirect, or
// one ordered consumer.
func (w *Worker) rebuild(ctx context.Context, id string, before uint64) (*conversation.Conversation, uint64, error) {
	start := time.Now()
	conv := conversation.NewConversation(conversation.WithMaxMessages(w.cfg.limits.MaxMessages))
	if before <= 1 {
		return conv, 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()

	// The first event tells whether there is anything to replay (a new
	// conversation: nothing). Short histories are then read from the
	// leader one event at a time: no consumer to create, which on a cluster
	// goes through the meta leader and made a failover's burst of rebuilds
	// slow. Longer ones are read by an ordered consumer: one round trip
	// per event would make them slow instead (a crash-looping worker
	// rebuilding hundreds of long conversations).
	r := &replay{w: w, id: id, before: before, conv: conv}
	done, err := r.direct(ctx, 1)
	if err == nil && !done {
		var n uint64
		if n, err = w.storedEvents(ctx, id); err == nil && n <= replayDirect {
			done, err = r.direct(ctx, replayDirect)
		}
	}
	for err == nil && !done {
		from := r.seen + 1
		if done, err = r.pass(ctx, from); err == nil && !done {
			// The pass stalled (its consumer's server went away, or it
			// lags): go on from where it stopped, with a new consumer.
			w.cfg.logger.WarnContext(ctx, "rebuild stalled; resuming", "conversation", id, "after", r.seen)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("streams: rebuild %s after %d events: %w", id, r.n, err)
	}
	w.metrics.rebuilt(ctx, time.Since(start))
	w.cfg.logger.DebugContext(ctx, "conversation rebuilt", "conversation", id, "events", r.n, "before", before, "elapsed", time.Since(start))
	return conv, r.last, nil
}

// replayDirect is the most events a conversation may have stored for a
// rebuild to read them from the stream's leader one by one rather than
// with a consumer.
const replayDirect = 32

// replayStall is how long a rebuild waits for its next event before it
// asks the leader whether one is due and, if so, starts a new consumer.
const replayStall = 2 * time.Second

// replay is one rebuild in progress.
type replay struct {
	w      *Worker
	id     string
	before uint64
	conv   *conversation.Conversation
	n      int    // events read
	seen   uint64 // sequence of the last event read
	last   uint64 // sequence of the last event that changed conv
}

// direct reads up to limit events of the conversation after r.seen from
// the stream's leader and applies those before r.before. It returns true
// when every such event has been read.
func (r *replay) direct(ctx context.Context, limit int) (bool, error) {
	for range limit {
		m, err := r.w.nextEvent(ctx, r.id, r.seen+1)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if m.Sequence >= r.before {
			return true, nil
		}
		r.apply(ctx, r.w.decodeStored(m), m.Sequence)
	}
	return false, nil
}

// apply applies one stored event to the conversation being rebuilt.
func (r *replay) apply(ctx context.Context, d *delivery, seq uint64) {
	if err := r.w.validate(ctx, d); err == nil && applyEvent(r.conv, d.event.Type(), d.data) == nil {
		r.last = seq
	}
	r.n++
	r.seen = seq
}

// pass reads the events of the conversation from sequence from on, with an
// ordered consumer, and applies those before r.before. It returns true
// when every such event has been read, false when the consumer stalled
// with events left.
func (r *replay) pass(ctx context.Context, from uint64) (bool, error) {
	w := r.w
	cons, err := w.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{w.eventSubject(r.id)},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		return false, err
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
		return false, err
	}
	defer it.Stop()
	for {
		next, cancel := context.WithTimeout(ctx, replayStall)
		m, err := it.Next(jetstream.NextContext(next))
		cancel()
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				return false, err
			}
			return r.complete(ctx)
		}
		meta, err := m.Metadata()
		if err != nil {
			return false, err
		}
		seq := meta.Sequence.Stream
		if seq >= r.before {
			return true, nil
		}
		r.apply(ctx, w.decode(m), seq)
		if seq == r.before-1 {
			return true, nil
		}
		if meta.NumPending == 0 {
			// The consumer may live on a replica that has not caught up:
			// only the leader can say that nothing is left.
			if done, err := r.complete(ctx); done || err != nil {
				return done, err
			}
		}
	}
}

// complete asks the stream's leader whether an event of the conversation
// before r.before follows the last one read.
func (r *replay) complete(ctx context.Context) (bool, error) {
	next, err := r.w.nextEvent(ctx, r.id, r.seen+1)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return next.Sequence >= r.before, nil
}

// storedEvents returns how many events of conversation id the events
// stream holds, as its leader counts them.
func (w *Worker) storedEvents(ctx context.Context, id string) (uint64, error) {
	subject := w.eventSubject(id)
	info, err := w.stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	return info.State.Subjects[subject], nil
}
