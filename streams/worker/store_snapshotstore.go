package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// snapshotStore writes each conversation's full snapshot to the snapshot
// bucket and acknowledges the events a written snapshot covers: it holds
// those events until a store is due (deferAck, storeDue, storeInterval),
// writes with a compare-and-set on the key's revision (writeSnapshot),
// retries or refuses a write that did not take (stored, refuseStore),
// bounds a snapshot's size and nesting as events are applied
// (checkSnapshotLimits) and follows whether writes succeed, for Ready. A
// change to when or how a snapshot is written goes here, in store_write.go,
// store_refusal.go or store_limits.go. What it needs of the lanes, the
// stream, the snapshot heads and the checkpoints is passed in when it is
// made (storeHooks): of the lane it runs on it uses only the lane's store
// clock (store_clock.go).
type snapshotStore struct {
	// kv is the snapshot bucket, set by open.
	kv jetstream.KeyValue
	// writers runs the writes; the checkpoints' writes share it.
	writers *writers
	writing atomic.Int64 // writes in flight
	// health follows whether writes succeed, for Ready.
	health storeHealth
	// cap is what the server lets the worker store (store_limits.go).
	cap storeCap
	// bufs holds *[]byte buffers of written snapshots, for reuse.
	bufs sync.Pool
	lag  atomic.Int64 // smoothed event lag, ns (see observeLag)

	interval    time.Duration // the snapshot interval (WithSnapshotInterval)
	maxInterval time.Duration // the longest it stretches to (WithSnapshotMaxInterval)
	stallLimit  time.Duration // how long writes may all fail before Ready fails
	partitioned bool          // the events stream is partitioned (see storeFloor)
	// maxPayload is the server's max payload (nats.Conn.MaxPayload).
	maxPayload func() int64
	bucket     string // the bucket's name, counted in a write's subject
	maxBytes   int    // Limits.MaxSnapshotBytes; 0: the server's limits only
	maxDepth   int    // the nesting limit of branch points (Limits.branchDepth)
	logger     *slog.Logger
	metrics    *instruments
	// degraded holds the conversations held at a limit: a stored snapshot
	// clears one, a refused one marks it (store_refusal.go).
	degraded *degradedSet
	hooks    storeHooks
}

// storeHooks is what the snapshot store asks of the rest of the worker:
// to run on a lane and keep its cache, to settle the events a write covers
// with the stream, to read the stored head after a conflict, and to write
// a checkpoint along with a snapshot. Each runs on the lane but onLane.
type storeHooks struct {
	// onLane runs fn on lane l, after what is queued there; it fails once
	// the lanes are shut down.
	onLane func(ctx context.Context, l *lane, fn func()) error
	// holds reports whether lane l's cache holds st (false when l is nil:
	// the lane is letting st go already); drop lets st go from it, which
	// asks for st's unstored events again (see Worker.release); resize
	// has it weigh st again, its store state made or let go.
	holds  func(l *lane, st *convState) bool
	drop   func(l *lane, st *convState)
	resize func(l *lane, st *convState)
	// ack acknowledges events a stored snapshot covers; nak hands events
	// back for redelivery; terminate rejects events for re, each with its
	// record on the errors subject.
	ack       func(ctx context.Context, acks []pendingAck)
	nak       func(acks []pendingAck)
	terminate func(ctx context.Context, id string, acks []pendingAck, re *streams.RejectError)
	// readHead reads the stored snapshot's head of conversation id, as the
	// leader has it, and the key's revision.
	readHead func(ctx context.Context, id string) (snapshotHead, uint64, error)
	// checkpointDue reports whether a checkpoint goes with a store of st
	// beginning now; checkpointStored writes cp, captured then, once the
	// store is written; checkpointLeft writes st's checkpoint, when due, as
	// a state with nothing left to store is let go.
	checkpointDue    func(st *convState) bool
	checkpointStored func(ctx context.Context, st *convState, cp *checkpointOf)
	checkpointLeft   func(ctx context.Context, st *convState)
}

// storeHooks is how w's snapshot store reaches the lanes and their caches,
// the stream, the snapshot heads and the checkpoints.
func (w *Worker) storeHooks() storeHooks {
	return storeHooks{
		onLane:    func(ctx context.Context, l *lane, fn func()) error { return w.lanes.do(ctx, l, fn) },
		holds:     func(l *lane, st *convState) bool { return l != nil && l.cache.Peek(st.id) == st },
		drop:      func(l *lane, st *convState) { l.cache.Drop(st.id) },
		resize:    func(l *lane, st *convState) { l.cache.Resize(st) },
		ack:       w.ackAll,
		nak:       w.nakAll,
		terminate: w.terminateAll,
		readHead: func(ctx context.Context, id string) (snapshotHead, uint64, error) {
			return w.readHead(ctx, id, min(w.reads.Pick(), read.Confirmed))
		},
		// w.cp is set by Run, after New made the store: read it at the call.
		checkpointDue:    func(st *convState) bool { return w.cp.busyDue(st) },
		checkpointStored: func(ctx context.Context, st *convState, cp *checkpointOf) { w.cp.writeCaptured(ctx, st, cp) },
		checkpointLeft:   func(ctx context.Context, st *convState) { w.cp.write(ctx, st, false) },
	}
}

// newSnapshotStore returns the snapshot store of a worker of configuration
// cfg; its bucket is set by open.
func newSnapshotStore(cfg config, ws *writers, maxPayload func() int64, metrics *instruments, degraded *degradedSet, hooks storeHooks) *snapshotStore {
	return &snapshotStore{
		writers:     ws,
		interval:    cfg.snapshotInterval,
		maxInterval: cfg.snapshotMax,
		stallLimit:  cfg.storeStall,
		partitioned: cfg.storage.Partitions > 0,
		maxPayload:  maxPayload,
		bucket:      cfg.subjects.SnapshotBucket(),
		maxBytes:    cfg.limits.MaxSnapshotBytes,
		maxDepth:    cfg.limits.branchDepth(),
		logger:      cfg.logger,
		metrics:     metrics,
		degraded:    degraded,
		hooks:       hooks,
	}
}

// open sets the bucket the store writes to and reads its maximum message
// size; without that size, only the server's max payload bounds a write.
func (s *snapshotStore) open(ctx context.Context, kv jetstream.KeyValue) {
	s.kv = kv
	if err := s.cap.readBucket(ctx, kv); err != nil {
		s.logger.WarnContext(ctx, "snapshot bucket status not read: its maximum message size is not counted", "err", err)
	}
}

// check returns an error wrapping ErrNotReady when writes have all failed
// for longer than the stall limit (WithStoreStallLimit).
func (s *snapshotStore) check(now time.Time) error {
	return s.health.check(now, s.stallLimit)
}
