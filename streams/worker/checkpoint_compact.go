package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
)

// Compaction keeps the events stream bounded by what conversations hold
// now rather than by their history: once a conversation's checkpoint is
// written at a stream sequence, its events (and reply chunks) before that
// sequence are purged from the events stream (a purge by subject, below a
// sequence). The event at the checkpoint's sequence, the last it covers,
// stays: the stream keeps each conversation's last event, which readers
// ask for (a request waits for it to be applied, lastStoredSeq), at the
// cost of one event a conversation. A conversation is then rebuilt from
// its checkpoint and the events after it, so on a stream that may be
// compacted (checkpoint_compact_mark.go), by this worker or another, the
// checkpoint is no longer only a saving:
//
//   - Checkpoints never go back. A worker writes one only over an older
//     one (putNewer, a compare-and-set on the key's revision): a worker
//     letting go of a conversation after another took it over would
//     otherwise write an older checkpoint over one whose events are
//     purged, and a rebuild from it would miss them.
//   - A rebuild of a stored conversation whose checkpoint cannot be read
//     fails (the event is redelivered) instead of replaying what is left;
//     one whose checkpoint is newer than the event being applied, a
//     redelivery read against a lagging replica, fails likewise.
//   - A rebuild that began before a compaction (its checkpoint read, its
//     events not yet) would find its base purged away: after reading the
//     events it reads the checkpoint again, and starts over from the new
//     one when it changed (rebuildCompacted, TestCompactionRacesRebuild).
//
// A conversation that stays busy is checkpointed, and so compacted, with
// a snapshot store once the events since its last checkpoint add up to
// more than ratio times what it holds (WithCompactRatio, compactDue): the
// stream then holds about 1+ratio times what busy conversations hold,
// where the rule that bounds a rebuild alone (checkpointBusyEvents) let
// small conversations edited often hold 9 to 10 times (BenchmarkCompaction).
// One such write is under way per conversation at a time (convState's
// checkpointing), the rule re-armed when it ends: stores come at most
// every snapshot interval, but without it a conversation whose writes
// lag (the bucket slow, every slot busy) would queue one a store. The
// price: a store that finds one under way adds none, so the events it
// covers stay until the conversation's next store, or until it goes quiet
// (WithCacheIdle) or is let go of, which checkpoint it by their own rules.
//
// TestCompaction checks that the stream stays bounded and that, after a
// restart with an empty cache, every conversation equals Parse;
// TestCompactionWorkerKilled kills a worker while it compacts.
// BenchmarkCompaction measures the stream's bytes against the
// conversations' and the CPU compaction costs.

// DefaultEventCompaction is whether a worker compacts the events stream unless
// told otherwise (WithEventCompaction): on.
const DefaultEventCompaction = true

// DefaultCompactRatio is how much a busy conversation's events since its
// last checkpoint may add up to, as a multiple of what it holds, before a
// checkpoint compacts them, unless told otherwise (WithCompactRatio): 1,
// for an events stream of at most about twice what conversations hold.
const DefaultCompactRatio = 1.0

// compactTimeout bounds one purge.
const compactTimeout = 10 * time.Second

// compactRebuildTries is how many times a rebuild starts over from a
// checkpoint that changed while it read the events before it fails (the
// event is redelivered).
const compactRebuildTries = 4

// errCheckpointMoved is the error of a rebuild whose conversation was
// compacted past its checkpoint compactRebuildTries times in a row.
var errCheckpointMoved = errors.New("the conversation's checkpoint changed while its events were read")

// compactor purges conversations' events that their checkpoints cover,
// and knows whether the events stream may be compacted at all
// (checkpoint_compact_mark.go).
type compactor struct {
	stream jetstream.Stream
	// purges purges the stream below its consumers' floors
	// (consumer_purges.go).
	purges *purger
	// subjects are the literal subjects of what the events stream holds
	// of a conversation: its events, then its reply chunks. Each is purged
	// on its own: nats-server compares a purge's subject with every
	// message of the stream in the range purged, and a wildcard's
	// comparison (P.*.<id>) costs several times a literal's, which finds
	// the subject's messages by its index.
	subjects func(id string) []string
	// purge is WithEventCompaction's: whether this worker purges, once
	// the stream says it may be compacted.
	purge bool
	// ratio is WithCompactRatio's (0: off).
	ratio   float64
	metrics *instruments
	logger  *slog.Logger
	// mark is what the events stream said of compaction when last read;
	// poll and settle are compactionPoll and CompactionSettle, shorter
	// in tests.
	mark         atomic.Pointer[EventCompaction]
	poll, settle time.Duration
	// spacing is deleteSpacing, lower in tests.
	spacing uint64
}

// newCompactor returns the compactor of the events stream, whose metadata
// when bound said mark, for a worker that purges or not.
func newCompactor(stream jetstream.Stream, purges *purger, subjects func(id string) []string, purge bool, ratio float64,
	ins *instruments, log *slog.Logger, mark EventCompaction) *compactor {
	c := &compactor{stream: stream, purges: purges, subjects: subjects, purge: purge, ratio: ratio, metrics: ins, logger: log,
		poll: compactionPoll, settle: CompactionSettle, spacing: deleteSpacing}
	c.mark.Store(&mark)
	return c
}

// setMark records what the events stream says of compaction now, and
// returns what it said before. A mark once on stays on: a stream may have
// been compacted already.
func (c *compactor) setMark(mark EventCompaction) EventCompaction {
	was := *c.mark.Load()
	if !was.On || mark.On {
		c.mark.Store(&mark)
	}
	return was
}

// on reports whether the events stream may be compacted: every worker
// then follows compaction's rules, whether it purges or not. Every
// compactor holds a mark (newCompactor).
func (c *compactor) on() bool { return c != nil && c.mark.Load().On }

// settled reports whether the mark is on and has been long enough for
// every worker to have read it, at now.
func (c *compactor) settled(now time.Time) bool {
	mark := c.mark.Load()
	return mark.On && (mark.Since.IsZero() || !now.Before(mark.Since.Add(c.settle)))
}

// purging reports whether this worker purges the events checkpoints
// cover, at now.
func (c *compactor) purging(now time.Time) bool { return c != nil && c.purge && c.settled(now) }

// compact removes the events and chunks of conversation id stored before
// sequence seq, that of the last event its checkpoint just written covers,
// as far as its consumer's floor allows (consumer_purges.go: the rest is
// removed once the floor passes it): its events one by one when dels
// lists them (eventSeqs.before) at least deleteSpacing apart on average,
// by a purge of their subject otherwise, and its chunks by a purge of
// theirs. A failure is logged and
// counted, and compact reports false: the next checkpoint's compaction
// then purges by subject, which covers them. It runs on a writer.
func (c *compactor) compact(ctx context.Context, id string, seq uint64, dels []uint64) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), compactTimeout)
	defer cancel()
	var err error
	subjects := c.subjects(id)
	if n := uint64(len(dels)); n > 0 && (seq-dels[0])/n < c.spacing {
		dels = nil // close together: a purge walks few others
	}
	if dels != nil {
		err = c.purges.delete(ctx, id, dels)
		subjects = subjects[1:] // the events' subject is the first
	}
	for _, subject := range subjects {
		if err != nil {
			break
		}
		_, err = c.purges.purge(ctx, id, subject, seq)
	}
	if errors.Is(err, nats.ErrConnectionClosed) {
		c.metrics.compacted(ctx, "failed")
		c.logger.DebugContext(ctx, "events not compacted: the connection closed", "conversation", id, "before", seq)
		return false
	}
	if err != nil {
		c.metrics.compacted(ctx, "failed")
		c.logger.WarnContext(ctx, "events not compacted", "conversation", id, "before", seq, "err", err)
		return false
	}
	c.metrics.compacted(ctx, "purged")
	return true
}

// compactDue reports whether st, being stored and holding held bytes of
// messages, is to be checkpointed for its events to be compacted: they add
// up to more than ratio times held, and no checkpoint of it is being
// written.
func (c *checkpointer) compactDue(st *convState, held int) bool {
	return c.compactor.purging(time.Now()) && c.compactor.ratio > 0 && !st.checkpointing.Load() &&
		float64(st.sinceCheckpoint.bytes) > c.compactor.ratio*float64(held)
}

// putTries bounds the compare-and-set writes of one checkpoint (putNewer)
// that find the key changed since it was read.
const putTries = 3

// putNewer writes value, the checkpoint of conversation id at sequence
// seq, unless the bucket holds one at seq or later already. It reports
// whether it wrote it.
func (c *checkpointer) putNewer(ctx context.Context, id string, value []byte, seq uint64) (bool, error) {
	for try := 1; ; try++ {
		stored, rev, err := c.get(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return false, err
		default:
			if at, err := checkpointSeq(stored); err == nil && at >= seq {
				return false, nil
			}
		}
		if rev == 0 {
			_, err = c.bucket.Create(ctx, id, value)
		} else {
			_, err = c.bucket.Update(ctx, id, value, rev)
		}
		if err == nil {
			return true, nil
		}
		// Written meanwhile (by another worker, or read from a replica
		// behind): read again.
		if try == putTries || !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, err
		}
	}
}

// checkpointSeq returns the sequence a stored checkpoint stands at.
func checkpointSeq(value []byte) (uint64, error) {
	if n, err := s2.DecodedLen(value); err != nil || n > maxCheckpointBytes {
		return 0, fmt.Errorf("not a checkpoint of at most %d bytes (%d, %v)", maxCheckpointBytes, n, err)
	}
	plain, err := s2.Decode(nil, value)
	if err != nil {
		return 0, err
	}
	var head struct {
		Seq uint64 `msgpack:"s"`
	}
	if err := msgpack.Unmarshal(plain, &head); err != nil {
		return 0, err
	}
	return head.Seq, nil
}

// checkpointRevision returns the revision of conversation id's checkpoint
// (0: none).
func (c *checkpointer) checkpointRevision(ctx context.Context, id string) (uint64, error) {
	_, rev, err := c.get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	return rev, err
}
