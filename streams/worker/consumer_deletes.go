package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// deletesInFlight is how many deletes of one compaction are in flight at
// once: a compaction's deletes are a round trip each, and one at a time
// would hold its writer for all of them in turn.
const deletesInFlight = 8

// delete removes from the events stream the messages at seqs (in order),
// those of conversation id a checkpoint covers, one by one, below the
// floor of the conversation's consumer as purge does (consumer_purges.go):
// those above it are owed, and deleted once it has passed them (pay). A
// message already gone counts as deleted. With nothing to delete (a
// checkpoint right after the last) it does not read the floor, which can
// cost a request to the server.
func (p *purger) delete(ctx context.Context, id string, seqs []uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	floor, err := p.floor(ctx, p.partition(id))
	if err != nil {
		return err
	}
	n := below(seqs, floor)
	if later := seqs[n:]; len(later) > 0 {
		p.mu.Lock()
		p.owedDels[id] = append(p.owedDels[id], later...)
		p.mu.Unlock()
	}
	return p.deleteNow(ctx, seqs[:n])
}

// below returns how many of seqs (in order) are at or below floor.
func below(seqs []uint64, floor uint64) int {
	n, found := slices.BinarySearch(seqs, floor)
	if found {
		n++
	}
	return n
}

// deleteNow deletes the messages at seqs, deletesInFlight at a time,
// and returns the first failure.
func (p *purger) deleteNow(ctx context.Context, seqs []uint64) error {
	return deleteEach(seqs, deletesInFlight, func(seq uint64) error {
		if err := p.stream.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("worker: delete event %d: %w", seq, err)
		}
		return nil
	})
}

// deleteEach calls del for each of seqs, inFlight at a time, until one
// fails, and returns the first failure: each delete is a round trip, and
// the server applies them one at a time, so a few in flight overlap the
// trips.
func deleteEach(seqs []uint64, inFlight int, del func(seq uint64) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(inFlight, len(seqs)) {
		wg.Go(func() {
			for {
				mu.Lock()
				if next == len(seqs) || first != nil {
					mu.Unlock()
					return
				}
				seq := seqs[next]
				next++
				mu.Unlock()
				if err := del(seq); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// payDeletes deletes the owed messages the floors have passed since, and
// forgets those deleted (or found gone). What fails stays owed. It runs
// within pay, one at a time.
func (p *purger) payDeletes(ctx context.Context) {
	p.mu.Lock()
	owed := make(map[string][]uint64, len(p.owedDels))
	for id, seqs := range p.owedDels {
		owed[id] = seqs
	}
	p.mu.Unlock()
	for id, seqs := range owed {
		floor, err := p.floor(ctx, p.partition(id))
		if err != nil {
			continue
		}
		n := below(seqs, floor)
		if n == 0 {
			continue
		}
		if err := p.deleteNow(ctx, seqs[:n]); err != nil {
			if ctx.Err() == nil {
				p.logger.DebugContext(ctx, "owed deletes not made", "conversation", id, "err", err)
			}
			continue
		}
		p.mu.Lock()
		// Deletes owed since were appended after these.
		if rest := p.owedDels[id][n:]; len(rest) > 0 {
			p.owedDels[id] = slices.Clone(rest)
		} else {
			delete(p.owedDels, id)
		}
		p.mu.Unlock()
	}
}
