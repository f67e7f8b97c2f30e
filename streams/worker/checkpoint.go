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

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
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
//
// This file is the checkpoint's stored form: what is captured of a
// conversation, its encoding and decoding, and the bucket it is kept in.
// When one is written and read is the checkpointer's (checkpoint_checkpointer.go).

// checkpointFormat is the version of the encoding below; a checkpoint of
// another version is ignored (the conversation is replayed in full), one
// of a newer release with an error wrapping streams.ErrNewerFormat in the
// warning that says so. A field added to the struct below is skipped by
// the msgpack decoder of a release that does not know it: such a change
// keeps the format, so that a rolled-back worker still reads it.
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
	kv, err := openBucket(ctx, js, cfg, st.Reconcile, log)
	if err != nil {
		return nil, fmt.Errorf("worker: checkpoint bucket %s (--checkpoints=false does without it): %w", cfg.Bucket, err)
	}
	return kv, nil
}

// checkpointOf is what a checkpoint holds, taken from a conversation on
// its lane: its messages (immutable, so that the encoding can run
// elsewhere while the lane changes the conversation) and groups, with
// the sequence, version and event count they stand for. since is the
// state's changes since its last checkpoint that it covers.
type checkpointOf struct {
	msgs                 []*conversation.Message
	groups               []*conversation.MessageGroup
	seq, version, events uint64
	since                checkpointLag
	// dels are the stream sequences of the conversation's events before
	// seq, for its compaction to delete; nil: it purges them by subject
	// (see eventSeqs).
	dels []uint64
}

// capture takes st's checkpoint contents. It runs on the lane and costs a
// copy of the message pointers (and of the sequences its compaction
// deletes).
func capture(st *convState) *checkpointOf {
	cp := &checkpointOf{msgs: st.conv.Messages(), groups: slices.Clone(st.conv.Groups()),
		seq: st.seq, version: st.version, events: st.events, since: st.sinceCheckpoint}
	cp.since.seqs = nil // the lane's
	if !st.repurge.Load() {
		cp.dels = st.sinceCheckpoint.seqs.before(st.seq)
	}
	return cp
}

// checkpointBuffers are the room a checkpoint is encoded in: its msgpack
// form and that form compressed. A worker hands them from one write to
// the next (checkpointer.buffers), so that a busy conversation's
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
	case cp.Format > checkpointFormat:
		return nil, nil, fmt.Errorf("%w: checkpoint format %d, this release reads up to %d", streams.ErrNewerFormat, cp.Format, checkpointFormat)
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

// StoredCheckpoint is a conversation's checkpoint as Checkpoints.Read
// reads it.
type StoredCheckpoint struct {
	// Conversation holds the checkpoint's messages and groups.
	Conversation *conversation.Conversation
	// Sequence is the events stream's sequence up to which every event of
	// the conversation is in; with compaction on (WithEventCompaction),
	// the stream may hold none of those.
	Sequence uint64
	// Revision is the checkpoint's revision in its bucket: a read of the
	// events after Sequence that finds it changed afterwards may have
	// missed events a compaction removed, and starts over.
	Revision uint64
}

// Checkpoints reads conversations' checkpoints as the checkpoint bucket's
// leader holds them, for a reader of a compacted events stream (convctl
// export), which starts from a conversation's checkpoint as a worker's
// rebuild does. A replica behind the leader may hold an older checkpoint,
// whose later events a compaction purged (TestCheckpointReadsConfirmed).
// A nil *Checkpoints, of a deployment without checkpoints, holds none.
type Checkpoints struct {
	keys *read.Keys
}

// OpenCheckpoints returns the reader of the checkpoint bucket of s
// (streams.Subjects.CheckpointBucket) over js's connection;
// jetstream.ErrBucketNotFound when there is none (checkpoints off).
func OpenCheckpoints(ctx context.Context, js jetstream.JetStream, s streams.Subjects) (*Checkpoints, error) {
	kv, err := js.KeyValue(ctx, s.CheckpointBucket())
	if err != nil {
		return nil, err
	}
	return &Checkpoints{keys: read.NewKeys(ctx, js.Conn(), kv)}, nil
}

// Read reads conversation id's checkpoint into a conversation made with
// opts. It returns jetstream.ErrKeyNotFound when there is none.
func (c *Checkpoints) Read(ctx context.Context, id string, opts ...conversation.Option) (*StoredCheckpoint, error) {
	if c == nil {
		return nil, jetstream.ErrKeyNotFound
	}
	value, rev, err := c.keys.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	cp, conv, err := decodeCheckpoint(value, opts...)
	if err != nil {
		return nil, fmt.Errorf("worker: checkpoint of %s: %w", id, err)
	}
	return &StoredCheckpoint{Conversation: conv, Sequence: cp.Seq, Revision: rev}, nil
}

// Revision returns the revision of conversation id's checkpoint (0: none).
func (c *Checkpoints) Revision(ctx context.Context, id string) (uint64, error) {
	if c == nil {
		return 0, nil
	}
	_, rev, err := c.keys.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	return rev, err
}
