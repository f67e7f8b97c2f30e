package worker

import "slices"

// maxEventSeqs bounds the sequences an eventSeqs holds: a conversation
// with more events since its last compaction (a long one taking small
// edits, compaction off) gives its list up and is compacted by subject
// (8 bytes each: 4 KiB at most a conversation).
const maxEventSeqs = 512

// deleteSpacing is the mean distance in stream sequence between a
// conversation's events from which compaction deletes them one by one
// rather than purge their subject. A purge makes nats-server look at every
// message of the stream between the conversation's first event left and
// the checkpoint (PurgeEx walks the range in each block), whatever
// conversation it belongs to, so its cost grows with how many
// conversations interleave; a delete costs a request, the same whatever
// the stream holds. In BenchmarkCompactionRemoval (conversations' events
// round robin, so as many apart as there are conversations) a purge cost
// 8–10 µs of CPU an event removed among 100 conversations, 58–66 among
// 500, 78–111 among 1,000 and 208–226 among 4,000; a delete 73–93 µs at
// every size.
const deleteSpacing = 1024

// eventSeqs is a conversation's list of the stream sequences of its
// events in the events stream, in order, kept so that compaction can
// delete the events a checkpoint covers one by one where their subject's
// purge would cost more (compactor.compact, deleteSpacing).
//
// The list is complete when it holds every event of the conversation
// left in the stream. A state loaded or rebuilt has none (events before
// what it read may be left: a checkpoint's last event, a purge held back
// or lost), and one whose list outgrew maxEventSeqs is incomplete; its
// next compaction purges by subject, and the list is complete from that
// checkpoint on. Deleting is only ever the cheaper way to the same
// result: an event a delete misses stays in the stream, covered by the
// checkpoint, and is skipped by a rebuild.
type eventSeqs struct {
	seqs     []uint64
	complete bool
	// lost is set when an event went unrecorded since the last
	// checkpoint (the list was full).
	lost bool
}

// add records the event at stream sequence seq, applied to the
// conversation.
func (e *eventSeqs) add(seq uint64) {
	switch {
	case e.lost:
	case len(e.seqs) == maxEventSeqs:
		e.seqs, e.lost = nil, true
	default:
		e.seqs = append(e.seqs, seq)
	}
}

// before returns a copy of the sequences below seq, for the compaction
// of a checkpoint at seq to delete, or nil when the list is not complete
// (the compaction then purges their subject).
func (e *eventSeqs) before(seq uint64) []uint64 {
	if e == nil || !e.complete || e.lost {
		return nil
	}
	n, _ := slices.BinarySearch(e.seqs, seq)
	dels := make([]uint64, n) // not nil, even when empty
	copy(dels, e.seqs)
	return dels
}

// checkpointed drops the sequences below seq, those the compaction of a
// checkpoint at seq removes, and keeps seq itself (compaction keeps a
// checkpoint's last event, which the next one removes). Every earlier
// event goes, so the list is complete from seq on unless an event went
// unrecorded; a compaction that fails has the next one purge
// (convState.repurge).
func (e *eventSeqs) checkpointed(seq uint64) {
	if e.lost {
		e.seqs, e.complete, e.lost = nil, false, false
		return
	}
	n, found := slices.BinarySearch(e.seqs, seq)
	kept := e.seqs[n:]
	if !found {
		kept = append([]uint64{seq}, kept...)
	}
	// A new backing array once the dropped part is most of it, so that a
	// list that grows and shrinks does not keep its longest length.
	if n > len(kept) {
		kept = slices.Clone(kept)
	}
	e.seqs, e.complete = kept, true
}

// bytes is what the list holds in memory (for the cache's estimate).
func (e *eventSeqs) bytes() int {
	if e == nil {
		return 0
	}
	return eventSeqsBytes + 8*cap(e.seqs)
}

// eventSeqsBytes is what an eventSeqs takes besides its sequences.
const eventSeqsBytes = 32
