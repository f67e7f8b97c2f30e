package worker

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// The worker purges its own events stream by subject: compaction removes
// the events and chunks a checkpoint covers, a completion the chunks its
// reply replaces. A purge by subject of a message its consumer still has
// pending (delivered, not yet acknowledged: an event applied whose
// acknowledgement waits for its snapshot, deferAck) can make nats-server
// (2.15.2 and 2.15.3 at least) lose another pending message of that
// consumer. The consumer drops the purged message from its pending set
// and raises its delivered floor to that message's delivery, above an
// earlier delivery still pending (a delivery lost on the way, waiting
// for AckWait); the next acknowledgement in delivery order then carries
// the ack floor past the earlier message, which is never redelivered. Of
// the worker's consumers, every one that a purge's subject falls in is
// exposed, filtered or not: the chunks' purges did, and a consumer
// without filters does for every purge.
//
// So a purger purges only below the consumer's acknowledgement floor:
// what it covers has no pending delivery to lose. A purge the floor has
// not passed yet is owed, and made once it has (purgeRetry), or at a
// graceful stop (settle). An event that stays unacknowledged (one waiting on a
// conversation it cannot be applied to yet) holds back the purges of its
// consumer's conversations until it is: TestPurgeSparesPendingDeliveries.

// purgeFloorAge is how long a read of a consumer's acknowledgement floor
// serves the purges that follow it: floors only rise, so an older read is
// a lower bound, and a busy worker reads each consumer's up to 20 times a
// second rather than once a purge.
const purgeFloorAge = 50 * time.Millisecond

// purgeRetry is how often the purges a floor held back are tried again.
// The floor trails the checkpoints (their events' acknowledgements wait
// for their snapshots, and the floor for the slowest of them), so most
// compactions of a busy stream are made here: the stream holds what
// arrives meanwhile on top of what the ratio allows, and with a retry
// every second BenchmarkCompaction's busy stream reached 3x the
// conversations, 0.5–1.9x with this one.
const purgeRetry = 250 * time.Millisecond

// purger purges the events stream, below its consumers' floors.
type purger struct {
	stream jetstream.Stream
	// consumers returns the worker's consumers by partition (one when
	// the stream is not partitioned), nil before Run made them. A purger
	// without it purges a stream no consumer of the worker reads, below
	// no floor.
	consumers func() []jetstream.Consumer
	// partition returns the partition of conversation id (0 when the
	// stream is not partitioned).
	partition func(id string) int
	logger    *slog.Logger

	floors []floorRead // by partition

	// paying is held by pay: one at a time (the retries and a stop's
	// settle) pays what is owed.
	paying sync.Mutex
	mu     sync.Mutex
	owed   map[string]owedPurge // by subject
	// owedDels are the deletes a floor held back (consumer_deletes.go),
	// by conversation, in order.
	owedDels map[string][]uint64
}

// floorRead is the last read of one consumer's acknowledgement floor.
type floorRead struct {
	mu  sync.Mutex
	seq uint64 // the last stream sequence every delivery up to is acknowledged
	at  time.Time
}

// owedPurge is the part of a purge a floor held back: subject's messages
// of conversation id before sequence before, of which those before
// reached are purged.
type owedPurge struct {
	id              string
	before, reached uint64
}

// newPurger returns the purger of stream, whose consumers are those of
// partitions partitions (0: one, unpartitioned).
func newPurger(stream jetstream.Stream, partitions int, consumers func() []jetstream.Consumer,
	partition func(id string) int, log *slog.Logger) *purger {
	return &purger{stream: stream, consumers: consumers, partition: partition, logger: log,
		floors: make([]floorRead, max(partitions, 1)), owed: map[string]owedPurge{},
		owedDels: map[string][]uint64{}}
}

// purge removes the messages of subject, of conversation id, stored
// before sequence before, when the floor of the conversation's consumer
// has passed them; it reports whether it held them back, which it owes
// then (pay purges them).
func (p *purger) purge(ctx context.Context, id, subject string, before uint64) (held bool, err error) {
	return p.purgeBelow(ctx, id, subject, before, false)
}

// purgeBelow is purge; with partial, a purge held back removes what the
// floor allows, once the floor has risen past what it reached before. A
// purge asked for is made whole or not at all, and its rest left to
// pay: a store's checkpoint is written before the acknowledgements of
// its events reach the server, and a part now and the rest a second
// later would double the purges (BenchmarkCompaction).
func (p *purger) purgeBelow(ctx context.Context, id, subject string, before uint64, partial bool) (held bool, err error) {
	floor, err := p.floor(ctx, p.partition(id))
	if err != nil {
		return false, err
	}
	upTo := min(before, floor+1)
	held = upTo < before
	if held && !partial {
		upTo = 0
	}
	if upTo > 1 && upTo > p.reached(subject) {
		if err := p.stream.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(upTo)); err != nil {
			return held, err
		}
	}
	p.note(id, subject, before, upTo, held)
	return held, nil
}

// reached returns how far the purges of subject owed reached (0: none
// owed).
func (p *purger) reached(subject string) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owed[subject].reached
}

// note records the purge of subject before sequence before, made up to
// upTo: owed when it was held back, paid otherwise.
func (p *purger) note(id, subject string, before, upTo uint64, held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was, owed := p.owed[subject]
	switch {
	case held:
		p.owed[subject] = owedPurge{id: id, before: max(before, was.before), reached: max(upTo, was.reached)}
	case owed && was.before <= before:
		delete(p.owed, subject)
	case owed:
		was.reached = max(upTo, was.reached)
		p.owed[subject] = was
	}
}

// floor returns the acknowledgement floor of the consumer of partition
// part: read within purgeFloorAge, or read again. Before Run made the
// consumers it is 0: nothing is purged.
func (p *purger) floor(ctx context.Context, part int) (uint64, error) {
	if p.consumers == nil {
		return math.MaxUint64 - 1, nil
	}
	if part < 0 || part >= len(p.floors) {
		return 0, nil
	}
	f := &p.floors[part]
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.at.IsZero() && time.Since(f.at) < purgeFloorAge {
		return f.seq, nil
	}
	cons := p.consumers()
	if part >= len(cons) || cons[part] == nil {
		return 0, nil
	}
	info, err := cons[part].Info(ctx)
	if err != nil {
		return 0, err
	}
	f.seq, f.at = max(f.seq, info.AckFloor.Stream), time.Now()
	return f.seq, nil
}

// pay tries the owed purges and deletes again and returns how many
// subjects and conversations still have some owed.
func (p *purger) pay(ctx context.Context) int {
	p.paying.Lock()
	defer p.paying.Unlock()
	p.payDeletes(ctx)
	p.mu.Lock()
	owed := make(map[string]owedPurge, len(p.owed))
	for subject, o := range p.owed {
		owed[subject] = o
	}
	p.mu.Unlock()
	for subject, o := range owed {
		if _, err := p.purgeBelow(ctx, o.id, subject, o.before, true); err != nil && ctx.Err() == nil {
			p.logger.DebugContext(ctx, "owed purge not made", "subject", subject, "before", o.before, "err", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.owed) + len(p.owedDels)
}

// run pays the owed purges every purgeRetry until ctx ends.
func (p *purger) run(ctx context.Context) {
	t := time.NewTicker(purgeRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, compactTimeout)
			p.pay(pctx)
			cancel()
		}
	}
}

// settle pays the owed purges, trying again as the floors rise, until
// none is owed or ctx ends: a step of a graceful stop, once the last
// events are acknowledged. It returns how many are still owed.
func (p *purger) settle(ctx context.Context) int {
	for {
		left := p.pay(ctx)
		if left == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(purgeFloorAge):
		}
	}
}

// held returns how many subjects have a purge held back, and
// conversations deletes.
func (p *purger) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.owed) + len(p.owedDels)
}

// observePurges reports, as a gauge, the subjects whose purge waits for
// their consumer to acknowledge what it covers (convstream.purges.held):
// it stays up while an event goes unacknowledged.
func (w *Worker) observePurges(mp metric.MeterProvider) error {
	_, err := mp.Meter(streams.InstrumentationName).Int64ObservableGauge(MetricPurgesHeld, metric.WithUnit("{subject}"),
		metric.WithDescription("Subjects of the events stream (a conversation's events or reply chunks) whose purge, and conversations whose event deletes, wait for their consumer to acknowledge what they cover; it stays up while an event goes unacknowledged."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if p := w.purges.Load(); p != nil {
				o.Observe(int64(p.held()))
			} else {
				o.Observe(0)
			}
			return nil
		}))
	return err
}
