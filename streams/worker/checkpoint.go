package worker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// A checkpoint is a conversation's messages and groups as they stood after
// every one of its events up to a stream sequence, written to the
// checkpoint bucket when a worker lets go of the conversation (an eviction,
// a hand-off, a graceful stop) or compacts it, unused (WithCacheIdle), and
// now and then along with a snapshot store while it stays busy. A rebuild
// reads it in one get and replays only the events after it, instead of
// every event from the first: among many conversations each event read
// costs the server a scan from the one before (about 280 µs an event
// among 1,000 conversations; BENCHMARKS.md).
//
// Events are never changed once stored (a rejected one is deleted before
// any later event of its conversation is applied), so a checkpoint is a
// true state of its conversation at its sequence whoever wrote it and
// however old it is: an outdated one only leaves more events to replay.
// Writes need no compare-and-set, and reads may come from any replica.

// checkpointFormat is the version of the encoding below; a checkpoint of
// another version is ignored (the conversation is replayed in full).
// Format 2 added Sum, which lets a rebuild take the messages as they were
// written; format 1 checkpoints are still read, each message validated.
const checkpointFormat = 2

// maxCheckpointBytes bounds a checkpoint's size once decompressed. The
// 26,085-message bench conversation's is 7 MB.
const maxCheckpointBytes = 512 << 20

// checkpoint is the stored form, msgpack compressed with S2. Messages are
// their JSON objects as the conversation keeps them; groups likewise.
type checkpoint struct {
	Format int `msgpack:"f"`
	// Seq: every event of the conversation up to Seq is in; Version is the
	// last that changed it; Events how many of its events were read up to
	// Seq (to size the reads of those after).
	Seq      uint64   `msgpack:"s"`
	Version  uint64   `msgpack:"v"`
	Events   uint64   `msgpack:"n"`
	Messages [][]byte `msgpack:"m"`
	Groups   [][]byte `msgpack:"g"`
	// Sum is checkpointSum of Messages and Groups. The block format of S2
	// has no checksum, and a message taken as it was written is not
	// checked again (see conversation.Conversation.AppendCanonical).
	Sum uint32 `msgpack:"c"`
}

// castagnoli is the CRC-32C table, which the hash/crc32 package computes
// with the processor's CRC instructions where it has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpointSum is the CRC-32C of each message's and then each group's
// length and bytes.
func checkpointSum(msgs, groups [][]byte) uint32 {
	var sum uint32
	var n [binary.MaxVarintLen64]byte
	for _, list := range [][][]byte{msgs, groups} {
		sum = crc32.Update(sum, castagnoli, binary.AppendUvarint(n[:0], uint64(len(list))))
		for _, b := range list {
			sum = crc32.Update(sum, castagnoli, binary.AppendUvarint(n[:0], uint64(len(b))))
			sum = crc32.Update(sum, castagnoli, b)
		}
	}
	return sum
}

// checkpointAmplification is the checkpoint writing policy: a
// conversation let go of is written when the events applied since the
// checkpoint it was loaded from add up to at least 1/checkpointAmplification
// of it (a conversation of megabytes is not rewritten for a few small
// events). Writing a checkpoint costs a few nanoseconds a byte; replaying
// an event 25 µs (events close together in the stream) to 300 µs (among
// 1,000 conversations), about what writing 5 to 60 KB costs, so an eighth
// of a conversation of events of a few hundred bytes is already worth
// rewriting it for, and a small conversation is written for a single
// event: with 1,000 conversations of 8 events through a cache of 950 (each
// event a rebuild), writing only after 8 events took 7% more CPU and had
// four times the p99 (BENCHMARKS.md).
const checkpointAmplification = 8

// A conversation that stays busy is never let go of, so it is also
// checkpointed along with a snapshot store once at least
// checkpointBusyEvents events have come since its last checkpoint and they
// add up to a quarter of it (checkpointBusyAmplification): after a crash,
// which writes none, its rebuild replays at most about a quarter of its
// events. Stricter than the rule above, because it costs a busy worker
// while the other is paid when a conversation leaves: writing a checkpoint
// this often adds about a byte written for every byte of events (a
// checkpoint is four to six times smaller than the JSON it holds).
const (
	checkpointBusyEvents        = 64
	checkpointBusyAmplification = 4
)

// checkpointsInFlight bounds the checkpoint writes under way at once: an
// eviction beyond it lets its conversation go without one (a checkpoint
// only saves work), so that a burst of evictions keeps a bounded number
// of conversations alive for their encoding.
const checkpointsInFlight = 64

// checkpointsWaiting bounds the checkpoint writes queued for a slot while
// every slot is busy (see queueCheckpoint). Each holds what it captured: a
// pointer a message, and the groups. Past it, a compacting sweep leaves
// the rest uncompacted for the next one, and a conversation gone unused
// goes without (a sweep lets go of at most expireMax a lane).
const checkpointsWaiting = 16384

// checkpointStopBudget bounds how long a graceful stop spends writing
// checkpoints, after its snapshots are stored: conversations whose
// checkpoint is not written by then are rebuilt from their last one.
const checkpointStopBudget = 5 * time.Second

// provisionCheckpoints creates the checkpoint bucket when missing, brings
// an existing one's replicas in line (as Provision does the snapshot
// bucket's), and returns it.
func provisionCheckpoints(ctx context.Context, js jetstream.JetStream, s streams.Subjects, st Storage, log *slog.Logger) (jetstream.KeyValue, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      s.CheckpointBucket(),
		Description: "convstream: conversations' messages at a stream sequence, to rebuild them without a full replay",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(1, st.BucketReplicas),
		Placement:   st.placement(),
	}
	kv, err := openBucket(ctx, js, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("streams: checkpoint bucket %s (--checkpoints=false does without it): %w", cfg.Bucket, err)
	}
	return kv, nil
}

// checkpointOf is what a checkpoint holds, taken from a conversation on
// its lane: its messages (immutable, so that the encoding can run
// elsewhere while the lane changes the conversation) and groups, with
// the sequence, version and event count they stand for. sinceEvents and
// sinceBytes are the state's changes since its last checkpoint that it
// covers.
type checkpointOf struct {
	msgs                    []*conversation.Message
	groups                  []*conversation.MessageGroup
	seq, version, events    uint64
	sinceEvents, sinceBytes int
}

// capture takes st's checkpoint contents. It runs on the lane and costs a
// copy of the message pointers.
func capture(st *convState) *checkpointOf {
	return &checkpointOf{msgs: st.conv.Messages(), groups: slices.Clone(st.conv.Groups()),
		seq: st.seq, version: st.version, events: st.events, sinceEvents: st.sinceEvents, sinceBytes: st.sinceBytes}
}

// checkpointBuffers are the room a checkpoint is encoded in: its msgpack
// form and that form compressed. A worker hands them from one write to
// the next (Worker.checkpointBuffers), so that a busy conversation's
// checkpoints, about a byte for each byte of its events, do not each
// allocate, clear and regrow twice the conversation's size.
type checkpointBuffers struct{ plain, packed []byte }

// What msgpack adds to a checkpoint's messages and groups, at most: the
// map of its seven fields with their names, numbers and array headers
// (under 96 bytes), and a binary header of up to 5 bytes before each
// message or group.
const (
	checkpointFixedBytes = 96
	checkpointItemBytes  = 5
)

// encode returns the stored form of the checkpoint, encoded in bufs (grown
// as needed; nil: new room). The result is bufs.packed: it is good until
// bufs are used again.
func (c *checkpointOf) encode(bufs *checkpointBuffers) ([]byte, error) {
	if bufs == nil {
		bufs = new(checkpointBuffers)
	}
	cp := checkpoint{Format: checkpointFormat, Seq: c.seq, Version: c.version, Events: c.events}
	cp.Messages = make([][]byte, len(c.msgs))
	size := checkpointFixedBytes
	for i, m := range c.msgs {
		raw, err := m.JSON() // the message's own bytes: not copied
		if err != nil {
			return nil, err
		}
		cp.Messages[i] = raw
		size += len(raw) + checkpointItemBytes
	}
	for _, g := range c.groups {
		raw, err := g.MarshalJSON()
		if err != nil {
			return nil, err
		}
		cp.Groups = append(cp.Groups, raw)
		size += len(raw) + checkpointItemBytes
	}
	cp.Sum = checkpointSum(cp.Messages, cp.Groups)
	// Sized in one step: a growing buffer is cleared and copied again at
	// every doubling, which was most of an encode's time.
	buf := bytes.NewBuffer(slices.Grow(bufs.plain[:0], size))
	enc := msgpack.GetEncoder()
	enc.Reset(buf)
	err := enc.Encode(&cp)
	msgpack.PutEncoder(enc)
	if err != nil {
		return nil, err
	}
	bufs.plain = buf.Bytes()
	// S2 encodes into dst when it has room for the worst case.
	bufs.packed = s2.Encode(bufs.packed[:cap(bufs.packed)], bufs.plain)
	return bufs.packed, nil
}

// decodeCheckpoint reads a stored checkpoint into an empty conversation
// made with opts.
func decodeCheckpoint(value []byte, opts ...conversation.Option) (*checkpoint, *conversation.Conversation, error) {
	// S2 allocates the size the value says it decodes to.
	if n, err := s2.DecodedLen(value); err != nil || n > maxCheckpointBytes {
		return nil, nil, fmt.Errorf("not a checkpoint of at most %d bytes (%d, %v)", maxCheckpointBytes, n, err)
	}
	plain, err := s2.Decode(nil, value)
	if err != nil {
		return nil, nil, err
	}
	var cp checkpoint
	if err := msgpack.Unmarshal(plain, &cp); err != nil {
		return nil, nil, err
	}
	// A format 1 checkpoint has no sum: its messages are validated and
	// re-encoded, as an event's are.
	canonical := false
	switch {
	case cp.Format == 1:
	case cp.Format != checkpointFormat:
		return nil, nil, fmt.Errorf("format %d, want %d", cp.Format, checkpointFormat)
	case cp.Sum != checkpointSum(cp.Messages, cp.Groups):
		return nil, nil, errors.New("checksum mismatch")
	default:
		canonical = true
	}
	conv := conversation.NewConversation(opts...)
	for _, raw := range cp.Messages {
		var err error
		if canonical {
			err = conv.AppendCanonical(raw)
		} else {
			var m *conversation.Message
			if m, err = conversation.NewMessageJSON(raw); err == nil {
				err = conv.Append(m)
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	for _, raw := range cp.Groups {
		fields, err := conversation.DecodeFields(raw)
		if err != nil {
			return nil, nil, err
		}
		g, err := conversation.NewMessageGroup(fields)
		if err == nil {
			err = conv.UpsertGroup(g)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	cp.Messages, cp.Groups = nil, nil
	return &cp, conv, nil
}

// resume starts r from the conversation's checkpoint, when there is one
// before r.before. Without a usable one (none, unreadable, too late, or the
// bucket not answering) r replays every event: a checkpoint only saves
// work, and the events stream alone decides whether a rebuild can be done.
func (w *Worker) resume(ctx context.Context, r *replay) {
	entry, err := w.checkpoints.Get(ctx, r.id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	if err != nil {
		w.cfg.logger.WarnContext(ctx, "checkpoint not read; replaying every event", "conversation", r.id, "err", err)
		return
	}
	cp, conv, err := decodeCheckpoint(entry.Value(), w.cfg.limits.conversationOptions()...)
	if err != nil {
		w.cfg.logger.WarnContext(ctx, "checkpoint not usable; replaying every event", "conversation", r.id, "err", err)
		return
	}
	if cp.Seq >= r.before {
		// Written after the event being applied was: a worker applied it
		// before it crashed, and it is being redelivered.
		return
	}
	r.conv, r.seen, r.last, r.base, r.checkpoint = conv, cp.Seq, cp.Version, cp.Events, true
}

// checkpointDue reports whether st has changed enough since its last
// checkpoint to be worth a new one (see checkpointAmplification).
func (w *Worker) checkpointDue(st *convState) bool {
	// Only a state a stored snapshot covers: one whose store failed has
	// its events redelivered, and a rebuild for them could not use it.
	return w.checkpoints != nil && st.conv != nil && !st.unsaved() && st.storedSeq >= st.seq &&
		st.sinceEvents > 0 && st.sinceBytes*checkpointAmplification >= st.conv.MessageBytes()
}

// busyCheckpointDue reports whether st, being stored, has changed enough
// since its last checkpoint for one to go with the store (see
// checkpointBusyEvents).
func (w *Worker) busyCheckpointDue(st *convState) bool {
	return w.checkpoints != nil && st.conv != nil && st.sinceEvents >= checkpointBusyEvents &&
		st.sinceBytes*checkpointBusyAmplification >= st.conv.MessageBytes()
}

// checkpoint writes st's checkpoint in the background when it is due
// (checkpointDue) and one of the checkpointsInFlight slots is free, or,
// with wait, frees up before ctx ends; it reports whether a write began.
// It runs on the lane.
func (w *Worker) checkpoint(ctx context.Context, st *convState, wait bool) bool {
	if !w.checkpointDue(st) || !w.takeSlot(ctx, wait) {
		return false
	}
	w.writeCheckpoint(ctx, st, capture(st))
	return true
}

// takeSlot takes one of the checkpointsInFlight slots: a free one, or,
// with wait, one that frees up before ctx ends. It reports whether it
// did; the write that holds it gives it back.
func (w *Worker) takeSlot(ctx context.Context, wait bool) bool {
	if wait {
		select {
		case w.cpSlots <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if w.trySlot() {
		return true
	}
	w.metrics.checkpointed(ctx, "busy")
	return false
}

// trySlot takes a free one of the checkpointsInFlight slots, if any.
func (w *Worker) trySlot() bool {
	select {
	case w.cpSlots <- struct{}{}:
		return true
	default:
		return false
	}
}

// checkpointQuiet writes the checkpoint of st, about to be compacted, when
// one is due (checkpointDue), on a free slot or queued for one. It reports
// false when st must wait for a later sweep, the queue full: compacted
// states are not looked at again until used, and a checkpoint skipped
// here would leave a crash to replay the events of an idle conversation.
// It runs on the lane.
func (w *Worker) checkpointQuiet(ctx context.Context, st *convState) bool {
	return !w.checkpointDue(st) || w.queueCheckpoint(ctx, st, capture(st))
}

// checkpointLeaving writes the checkpoint of st, being let go, when one is
// due (checkpointDue), on a free slot or queued for one, holding the
// messages it captured until then; with the queue full it is not written.
// It runs on the lane.
func (w *Worker) checkpointLeaving(ctx context.Context, st *convState) {
	if w.checkpointDue(st) && !w.queueCheckpoint(ctx, st, capture(st)) {
		w.metrics.checkpointed(ctx, "busy")
	}
}

// writeCheckpoint encodes and writes cp, a checkpoint of st, in the
// background, on a slot taken for it, and counts st's changes since cp as
// its changes since its last checkpoint. It runs on the lane; the encoding
// does not, so that a long conversation's does not hold up the lane's
// events (a conversation of 26,085 messages takes 63 ms).
func (w *Worker) writeCheckpoint(ctx context.Context, st *convState, cp *checkpointOf) {
	job := w.checkpointWrite(ctx, st, cp)
	checkpointed(st, cp)
	w.runHeld(job)
}

// runHeld runs job on the writers, on the slot its caller took, then gives
// the slot on (see giveSlot).
func (w *Worker) runHeld(job func()) {
	w.writers.run(func() {
		job()
		w.giveSlot()
	})
}

// queueCheckpoint is writeCheckpoint without a slot taken (see
// onSlot). It reports false, changing nothing, when the queue is full. It
// runs on the lane.
func (w *Worker) queueCheckpoint(ctx context.Context, st *convState, cp *checkpointOf) bool {
	if !w.onSlot(w.checkpointWrite(ctx, st, cp)) {
		return false
	}
	checkpointed(st, cp)
	return true
}

// onSlot runs job on the writers on a free one of the checkpointsInFlight
// slots, or else queues it in cpQueue for the next write that finishes to
// run on its slot: writes wait without a goroutine each. It reports
// false, job dropped, when the queue is full.
func (w *Worker) onSlot(job func()) bool {
	if w.trySlot() {
		w.runHeld(job)
		return true
	}
	select {
	case w.cpQueue <- job:
	default:
		return false
	}
	// A slot given back since trySlot could have missed the write queued.
	if w.trySlot() {
		w.writers.run(w.giveSlot)
	}
	return true
}

// giveSlot runs the queued writes on the slot its caller holds, then gives
// it back, and takes one again for writes queued meanwhile: a write is
// queued before its writer tries for a slot, so one of the two runs it.
func (w *Worker) giveSlot() {
	for {
		select {
		case job := <-w.cpQueue:
			job()
			continue
		default:
		}
		<-w.cpSlots
		if len(w.cpQueue) == 0 || !w.trySlot() {
			return
		}
	}
}

// checkpointed counts st's changes since cp, a checkpoint of it being
// written, as its changes since its last checkpoint.
func checkpointed(st *convState, cp *checkpointOf) {
	st.sinceEvents -= cp.sinceEvents
	st.sinceBytes -= cp.sinceBytes
}

// checkpointWrite returns the write of cp, a checkpoint of st, to run on a
// slot.
func (w *Worker) checkpointWrite(ctx context.Context, st *convState, cp *checkpointOf) func() {
	id := st.id
	limit := int(w.nc.MaxPayload())
	return func() {
		bufs := w.checkpointBuffers()
		defer w.reuseCheckpointBuffers(bufs) // after the put: nats.go copies what it publishes
		value, err := cp.encode(bufs)
		if err == nil && len(value) > limit {
			err = fmt.Errorf("%d bytes, over the server's max payload of %d", len(value), limit)
		}
		if err != nil {
			w.metrics.checkpointed(ctx, "skipped")
			w.cfg.logger.DebugContext(ctx, "checkpoint not written", "conversation", id, "err", err)
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if _, err := w.checkpoints.Put(wctx, id, value); err != nil {
			w.metrics.checkpointed(ctx, "failed")
			w.cfg.logger.WarnContext(ctx, "checkpoint not written", "conversation", id, "err", err)
			return
		}
		w.metrics.checkpointed(ctx, "written")
	}
}

// checkpointBuffers returns room to encode a checkpoint in, that of a
// finished write when there is one.
func (w *Worker) checkpointBuffers() *checkpointBuffers {
	if b, ok := w.cpBufs.Get().(*checkpointBuffers); ok {
		return b
	}
	return new(checkpointBuffers)
}

// reuseCheckpointBuffers gives back the room of a written checkpoint,
// unless it is larger than maxReusedBuffer.
func (w *Worker) reuseCheckpointBuffers(b *checkpointBuffers) {
	if cap(b.plain) > maxReusedBuffer || cap(b.packed) > maxReusedBuffer {
		return
	}
	w.cpBufs.Put(b)
}

// checkpointAll writes, on every lane, the checkpoints due of the
// conversations held, and waits for them, for at most
// checkpointStopBudget: a step of a graceful stop, after the snapshots
// are stored.
func (w *Worker) checkpointAll(ctx context.Context) {
	if w.checkpoints == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, checkpointStopBudget)
	defer cancel()
	start := time.Now()
	var written, due atomic.Int64 // the lanes run at once
	err := w.lanes.callAll(ctx, func(l *lane) {
		l.cache.each(func(st *convState) {
			if ctx.Err() == nil && w.checkpointDue(st) {
				due.Add(1)
				if w.checkpoint(ctx, st, true) {
					written.Add(1)
				}
			}
		})
	})
	// Each write holds a slot until it returns, and one queued is run on
	// a slot before that is given back. (Not a WaitGroup: the idle sweep
	// may begin a write while this waits.)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for (len(w.cpSlots) > 0 || len(w.cpQueue) > 0) && ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	if err != nil || written.Load() < due.Load() {
		w.cfg.logger.WarnContext(ctx, "checkpoints on stop not all written", "due", due.Load(), "begun", written.Load(), "err", err)
	}
	w.cfg.logger.InfoContext(ctx, "checkpoints written on stop", "begun", written.Load(), "elapsed", time.Since(start))
}
