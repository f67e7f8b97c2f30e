package read

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// Mode is how a Reader reads a stored snapshot whose head decides what
// a conversation holds (Reader.Snapshot): the loads, and the read after a
// write conflict.
//
// A get from the bucket's leader goes through the JetStream API's queue
// and comes back as JSON with the snapshot in base64; a direct get is
// answered by a replica as the stored message. In BenchmarkReadStored
// (package worker) a 2 MiB snapshot took about 15 ms from the leader
// against 4.5 ms with a direct get. But a replica may not have applied
// what the leader acknowledged a moment ago, and a worker taking over a
// partition must see what its predecessor stored.
//
// The modes are ordered from the leader's own answer to a replica's as
// it is: a read whose answer must be the leader's even from a bucket of
// one replica, whose mirrors may answer its direct gets, asks for
// min(Pick(), Confirmed).
type Mode uint8

const (
	// Leader reads from the leader: for a bucket that does not answer
	// direct gets, or whose configuration could not be read.
	Leader Mode = iota
	// Confirmed reads with a direct get, then asks the leader for the
	// key's first value after the one read. The leader's "none" is a few
	// bytes, and makes the replica's answer the leader's own; anything
	// else, a mirror's answer or a replica's "none", is read again from
	// the leader. For a replicated bucket, while the snapshots read are
	// large (see heads).
	Confirmed
	// Direct takes the direct get's answer as it is: for a bucket of one
	// replica, which is its leader.
	Direct
)

// String names how heads are read: "direct", "confirmed" (by the leader,
// while the snapshots read are large) or "leader".
func (m Mode) String() string {
	return [...]string{Leader: "leader", Confirmed: "confirmed", Direct: "direct"}[m]
}

// modeOf returns how a Reader reads the heads of a bucket of cfg.
// Replicas raised while the worker runs are seen at its next start; until
// then a replica that lags may answer its direct gets, with the effects of
// a lagging mirror (see Reader.Snapshot).
func modeOf(cfg jetstream.StreamConfig) Mode {
	switch {
	case !cfg.AllowDirect:
		return Leader
	case cfg.Replicas <= 1 && cfg.Mirror == nil && len(cfg.Sources) == 0:
		return Direct
	default:
		return Confirmed
	}
}

// heads is how a Reader reads its bucket's heads: how, set by New from
// the bucket's configuration, and for a replicated bucket mean, a moving
// mean of the sizes of the snapshots read, none counting as 0. New
// conversations (none) and short ones are read from the leader, and a
// worker loading long ones (a partition handed over, a restart) reads them
// confirmed. The mean starts at that of the values the bucket holds, so
// the first loads of a worker that starts among long conversations, which
// run together (--loads) and each pick when they start, read confirmed.
// Then the first snapshot of 16 times from or more read from the leader
// moves it past from at once.
type heads struct {
	how  Mode
	from int64 // the mean from which heads are read confirmed
	mean atomic.Int64
}

// start sets how h reads the heads of bucket kv, from its configuration,
// and starts the mean at the mean size of kv's values. A bucket whose
// status cannot be read is read from its leader.
func (h *heads) start(ctx context.Context, kv jetstream.KeyValue) {
	h.how = Leader
	status, err := kv.Status(ctx)
	if err != nil {
		return
	}
	info, ok := status.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return
	}
	h.how = modeOf(info.StreamInfo().Config)
	if n := status.Values(); n > 0 {
		h.mean.Store(int64(status.Bytes() / n))
	}
}

// add counts a snapshot of n bytes into the mean, with weight 1/16, when
// the bucket is replicated (the mean decides nothing otherwise).
func (h *heads) add(n int) {
	if h.how != Confirmed {
		return
	}
	for {
		old := h.mean.Load()
		if h.mean.CompareAndSwap(old, old+(int64(n)-old)/16) {
			return
		}
	}
}

// pick returns how to read the next head.
func (h *heads) pick() Mode {
	if h.how == Confirmed && h.mean.Load() < h.from {
		return Leader
	}
	return h.how
}

// Pick returns how to read the next head: Leader while the snapshots read
// from a replicated bucket are small on average, else the bucket's Mode.
func (r *Reader) Pick() Mode { return r.heads.pick() }

// Mode returns how the bucket's heads are read, from its configuration
// (Confirmed for a replicated bucket, whichever Pick returns).
func (r *Reader) Mode() Mode { return r.heads.how }

// MeanSize returns the moving mean of the sizes of the snapshots read,
// which Pick compares with Config.ConfirmedFrom.
func (r *Reader) MeanSize() int64 { return r.heads.mean.Load() }

// Snapshot returns the stored snapshot of conversation id and its
// revision, as the bucket's leader holds it, read as how says; nil and 0
// when there is none (or it was deleted).
//
// An answer from a mirror of the bucket that answers direct gets for it
// (MirrorDirect) is not taken: the leader is asked then. A mirror's
// "none" carries no name, so with Direct one that lags may say a new
// conversation has no snapshot: it is then rebuilt from its events, which
// make the same conversation, and its first write conflicts and reads the
// head again.
func (r *Reader) Snapshot(ctx context.Context, id string, how Mode) ([]byte, uint64, error) {
	m, err := r.readLast(ctx, r.bucketStream, r.bucketKeys+id, how)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		m, err = nil, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read: read snapshot %s: %w", id, err)
	}
	var value []byte
	var rev uint64
	if m != nil {
		if op := m.Header.Get(streams.KVOperationHeader); op != "DEL" && op != "PURGE" {
			value, rev = m.Data, m.Sequence
		}
	}
	r.heads.add(len(value))
	return value, rev, nil
}

// readLast returns the last message of subject in stream, read as how
// says; jetstream.ErrMsgNotFound when there is none.
func (r *Reader) readLast(ctx context.Context, stream, subject string, how Mode) (*jetstream.RawStreamMsg, error) {
	req := msgGetRequest{LastFor: subject}
	if how == Leader {
		return r.leaderGet(ctx, stream, req)
	}
	m, from, err := r.directGet(ctx, stream, req)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		if how == Direct {
			return nil, err
		}
	case err != nil:
		return nil, err
	case from != stream:
		// A mirror's answer, of a mirror that may lag.
	case how == Direct:
		return m, nil
	default:
		return r.confirm(ctx, stream, subject, m)
	}
	return r.leaderGet(ctx, stream, req)
}

// confirm returns m, a replica's last message of subject in stream, when
// the stream's leader holds no later one, and otherwise the leader's last.
// The leader says "none" in a few bytes, whatever the size of m; a later
// message it answers with instead (not necessarily the last) is dropped.
func (r *Reader) confirm(ctx context.Context, stream, subject string, m *jetstream.RawStreamMsg) (*jetstream.RawStreamMsg, error) {
	_, err := r.leaderGet(ctx, stream, msgGetRequest{Seq: m.Sequence + 1, NextFor: subject})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	return r.leaderGet(ctx, stream, msgGetRequest{LastFor: subject})
}
