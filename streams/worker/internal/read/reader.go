package read

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// Config is what a Reader reads from and how.
type Config struct {
	// Conn carries the reads: gets from a stream's leader and direct gets.
	Conn *nats.Conn
	// Subjects names the events stream and the snapshot bucket.
	Subjects streams.Subjects
	// Partitions is the events stream's partition count (0: not
	// partitioned), which names a conversation's stored subject.
	Partitions int
	// Events is the events stream, whose leader counts a conversation's
	// events (StoredEvents).
	Events jetstream.Stream
	// Bucket is the snapshot bucket, whose configuration and mean value
	// size New reads (see Mode).
	Bucket jetstream.KeyValue
	// ConfirmedFrom is the mean size of the snapshots read from a
	// replicated bucket from which heads are read Confirmed.
	ConfirmedFrom int64
}

// Reader reads a worker's stored snapshots and events. It is safe for
// concurrent use: the lanes and the loads off them read at once.
type Reader struct {
	nc         *nats.Conn
	subjects   streams.Subjects
	partitions int
	events     jetstream.Stream
	// eventsStream and bucketStream name the streams read; bucketKeys
	// prefixes a key's subject in the bucket's.
	eventsStream, bucketStream, bucketKeys string
	heads                                  heads
	// quietAt is when a direct get last went unanswered (Unix
	// nanoseconds): for hedgeWindow after it, direct gets are asked twice
	// (hedgedRequest).
	quietAt atomic.Int64
}

// New returns a reader of what c names. It reads the bucket's status,
// which decides how its heads are read (see Mode); a bucket whose status
// cannot be read is read from its leader.
func New(ctx context.Context, c Config) *Reader {
	bucket := c.Subjects.SnapshotBucket()
	r := &Reader{nc: c.Conn, subjects: c.Subjects, partitions: c.Partitions, events: c.Events,
		eventsStream: c.Subjects.EventsStream(), bucketStream: "KV_" + bucket, bucketKeys: "$KV." + bucket + ".",
		heads: heads{from: c.ConfirmedFrom}}
	r.heads.start(ctx, c.Bucket)
	return r
}

// eventSubject is the filter subject of what the events stream holds of
// conversation id: its events and its reply chunks, which the worker
// applies in stream order like events.
func (r *Reader) eventSubject(id string) string {
	return r.subjects.StoredConversation(id, r.partitions)
}

// NextEvent returns the first stored event of conversation id at or after
// sequence from, read from the leader; jetstream.ErrMsgNotFound when there
// is none.
func (r *Reader) NextEvent(ctx context.Context, id string, from uint64) (*jetstream.RawStreamMsg, error) {
	return r.leaderGet(ctx, r.eventsStream, msgGetRequest{Seq: max(from, 1), NextFor: r.eventSubject(id)})
}

// LastEvent returns the last stored event of conversation id, read from
// the leader; jetstream.ErrMsgNotFound when there is none.
func (r *Reader) LastEvent(ctx context.Context, id string) (*jetstream.RawStreamMsg, error) {
	return r.leaderGet(ctx, r.eventsStream, msgGetRequest{LastFor: r.eventSubject(id)})
}

// EventAt returns the event stored at sequence seq, read from the leader,
// with the headers it was stored with (a direct get adds its own).
func (r *Reader) EventAt(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	return r.leaderGet(ctx, r.eventsStream, msgGetRequest{Seq: seq})
}

// StoredEvents returns how many events of conversation id the events
// stream holds, as its leader counts them.
func (r *Reader) StoredEvents(ctx context.Context, id string) (uint64, error) {
	subject := r.eventSubject(id)
	info, err := r.events.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// DirectFirstEvent returns the first event of conversation id that one
// replica of the events stream holds, read with a direct get: nil when
// that replica holds none. The stream's replicas and its mirrors that
// answer direct gets apply its messages in order, so one that holds an
// event holds every event stored before it; one that holds none may lag
// behind the leader.
//
// A direct get is answered by the stream itself, as the stored message,
// where a get from the leader goes through the JetStream API's queue (as
// many goroutines as the server has cores, shared with every other API
// call) and comes back as JSON with the message in base64. Every new
// conversation asks it; with it the p99 of 1,000 new conversations at
// 9,000 ev/s fell from 198-415 ms to 148-255 ms (make -C bench load-compare;
// bench/EXPERIMENTS.md, "A new conversation's first-event read from any
// replica"). TestDirectFirstEvent (package worker) checks what it returns.
func (r *Reader) DirectFirstEvent(ctx context.Context, id string) (*jetstream.RawStreamMsg, error) {
	m, _, err := r.directGet(ctx, r.eventsStream, msgGetRequest{Seq: 1, NextFor: r.eventSubject(id)})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// EventBatch reads up to batch events of conversation id, from sequence
// from on, in one batched direct get, answered by any one replica of the
// events stream, which may lag behind its leader: see directBatch.
// ErrBatchUnsupported when the server cannot batch (older than 2.11).
func (r *Reader) EventBatch(ctx context.Context, id string, from uint64, batch, maxBytes int,
	fn func(m *jetstream.RawStreamMsg, pending uint64) bool) error {
	return r.directBatch(ctx, r.eventsStream, r.eventSubject(id), from, batch, maxBytes, fn)
}
