package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// A consumer numbers its deliveries (the consumer sequence in a message's
// metadata), and a worker that pulls from it alone (the pinned client of a
// partition, or the only worker of an unpartitioned stream) sees them one
// after another. A delivery lost on the way (dropped by a client buffer
// that overflowed: nats.go's pull iterator drops what its buffer cannot
// hold and reports a slow consumer; by the network; by a server) shows as
// a break in that numbering at the next delivery, and the lost event comes
// back only after AckWait, after later events of its conversation. Applied
// over the gap, those would leave the conversation without the lost event,
// and its redelivery would be skipped as applied already.
//
// So each consumer's gapWatch counts the breaks seen; a delivery carries
// the count as of its arrival, and a conversation in memory the count it
// was last checked at (convState.gaps). Before an event applies to a
// conversation whose count is behind the event's, the stream is asked for
// the conversation's next event after the last one applied: when it is not
// this one, the conversation is rebuilt from the stream up to this event,
// the missing ones included, and their redeliveries are skipped then
// (stateForEvent). An event already applied is skipped only against a
// conversation so built. TestLostDeliveriesHealed loses a fifth of the
// deliveries on the way. NATS async errors (a slow consumer above all)
// count as a break of every consumer the worker pulls from.
//
// A worker that shares an unpartitioned consumer with other workers sees
// a break at almost every delivery and checks almost every event: correct,
// at a read from the stream per event (partitions avoid that).

// gapWatch watches one consumer's deliveries for breaks.
type gapWatch struct {
	// next is the consumer sequence of the delivery expected next (0
	// before the first); only the consumer's pull reads and writes it.
	next uint64
	// breaks counts the breaks seen and the re-syncs asked for.
	breaks atomic.Uint32
	// logged is when a break was last logged (Unix nanoseconds).
	logged atomic.Int64
}

// observe notes a delivery and returns the count of breaks as of it, and
// the consumer sequence expected when it is a break (0 when it is not).
func (g *gapWatch) observe(m jetstream.Msg) (breaks uint32, expected uint64) {
	meta, err := m.Metadata()
	if err != nil {
		return g.breaks.Load(), 0
	}
	dseq := meta.Sequence.Consumer
	expected, g.next = g.next, dseq+1
	if expected == 0 || expected == dseq {
		return g.breaks.Load(), 0
	}
	return g.breaks.Add(1), expected
}

// gapLogEvery is the least time between two log lines about breaks of a
// consumer (the metric counts them all).
const gapLogEvery = 10 * time.Second

// newGapWatches returns a watch for each consumer of the worker: one per
// partition, or the one consumer of an unpartitioned stream.
func newGapWatches(partitions int) []gapWatch { return make([]gapWatch, max(partitions, 1)) }

// watchOf returns the watch of the consumer that delivers partition p's
// events (p is ignored on an unpartitioned stream).
func (w *Worker) watchOf(p int) *gapWatch {
	if w.partitions() < 1 {
		return &w.gaps[0]
	}
	return &w.gaps[p]
}

// delivered notes a delivery of the consumer of partition p (any on an
// unpartitioned stream) and returns the count of breaks it carries.
func (w *Worker) delivered(ctx context.Context, p int, m jetstream.Msg) uint32 {
	g := w.watchOf(p)
	breaks, expected := g.observe(m)
	if expected == 0 {
		return breaks
	}
	w.metrics.deliveryGap(ctx, gapInSequence)
	now := time.Now().UnixNano()
	if last := g.logged.Load(); now-last < int64(gapLogEvery) || !g.logged.CompareAndSwap(last, now) {
		return breaks
	}
	got := uint64(0)
	if meta, err := m.Metadata(); err == nil {
		got = meta.Sequence.Consumer
	}
	args := []any{"consumer", w.consumerName(p), "expected", expected, "got", got, "breaks", breaks}
	if w.partitions() < 1 {
		args = append(args, "hint", "another worker pulling from the same consumer breaks it at almost every event, each then checked against the stream: run workers with partitions")
	}
	w.cfg.logger.WarnContext(ctx, "deliveries missing from the consumer: conversations are checked against the stream before their next event", args...)
	return breaks
}

// consumerName is the durable name of the consumer of partition p (of the
// stream, when unpartitioned).
func (w *Worker) consumerName(p int) string {
	if w.partitions() < 1 {
		return w.cfg.consumer
	}
	return w.cfg.partitionConsumer(p)
}

// partitionOf returns the partition of conversation id, whose consumer
// delivers its events (0 on an unpartitioned stream).
func (w *Worker) partitionOf(id string) int {
	if n := w.partitions(); n > 0 {
		return streams.PartitionOf(id, n)
	}
	return 0
}

// resyncAll counts a break in every consumer's deliveries: their
// conversations are checked against the stream before their next event.
func (w *Worker) resyncAll() {
	for i := range w.gaps {
		w.gaps[i].breaks.Add(1)
	}
}

// watchAsyncErrors adds to nc's async error handler (which it still calls)
// a count of the errors by kind, and a re-sync of every consumer after one
// on a subscription (a slow consumer's dropped messages above all: they
// may be the worker's events). It returns what puts the handler back.
func (w *Worker) watchAsyncErrors(ctx context.Context) (restore func()) {
	prev := w.nc.Opts.AsyncErrorCB
	w.nc.SetErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
		slow := errors.Is(err, nats.ErrSlowConsumer)
		w.metrics.asyncError(ctx, slow)
		if sub != nil {
			subject := sub.Subject
			w.resyncAll()
			w.metrics.deliveryGap(ctx, gapAfterAsyncError)
			w.cfg.logger.WarnContext(ctx, "NATS async error on a subscription: conversations are checked against the stream before their next event",
				"subject", subject, "slow_consumer", slow, "err", err)
		}
		if prev != nil {
			prev(nc, sub, err)
		}
	})
	return func() { w.nc.SetErrorHandler(prev) }
}
