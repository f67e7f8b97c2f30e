package worker

import "math"

// convStore is the snapshot store's part of a conversation's state
// (convState embeds it): what was stored, what waits for a store and when
// it runs. snapshotStore alone changes it, on the state's lane.
type convStore struct {
	// The stored snapshot: its version, sequence and KV revision (0: none).
	storedVersion, storedSeq, rev uint64
	// store holds the events waiting for a store and the write in flight,
	// from an event until a write leaves nothing pending (nil otherwise:
	// see storeState); storing is true while a store is queued on the
	// lane.
	store *storeState
	// lastStore is when the last snapshot was written, in Unix nanoseconds
	// as the lane's store clock counts (0: none since the state was
	// loaded).
	lastStore int64
	// storeAt is when the queued store runs, on the lane's clock (moved
	// forward when a store falls due earlier); retryAt, when not 0, is when
	// a failed or outdated write is to be retried. Both are Unix
	// nanoseconds, and they belong with store: they sit here rather than
	// in storeState, which a conversation at rest does not have.
	storeAt, retryAt int64
	// snapshotBytes is the size of the last snapshot encoded (0: none
	// yet); unstoredBytes that of the events in store.unstored. Both are
	// clamped to 32 bits (see clamp32): a snapshot is one message, under
	// the server's limit of 64 MiB, and the events' size only weighs the
	// next store against the snapshot.
	snapshotBytes, unstoredBytes int32
	// phase places the state's stores within a stretched interval (see
	// storeDue), drawn at random when the state is made.
	phase uint32
	// failures counts writes in a row that failed transiently (the server
	// away, a timeout); the next try waits longer each time. It stops
	// counting at its maximum, past every bound it is compared with.
	failures uint8
	storing  bool
	// leaving marks a state of a partition this worker lost: its unstored
	// events are stored (and acknowledged) before it is let go, so that the
	// partition's new owner does not apply them a second time.
	leaving bool
}

// storeState is what a conversation's state holds while its events go to
// the bucket: the events published and not yet covered by a stored
// snapshot, and the write in flight. A state has one from an event until a
// write leaves nothing pending (or the cache compacts it), so that a
// conversation at rest, most of a cache, does not hold it. It is a slice
// and a pointer, 32 bytes. The rest of what a pending store needs (its due
// and retry times, the events' size, the failures) sits in the state
// itself, in padding and narrowed fields (see convStore): kept here, in a
// struct of 96 bytes, it made a live conversation of one message hold
// 3.15 times its JSON (TestShortConversations).
type storeState struct {
	// unstored are the events published since the last store began,
	// acknowledged once a store covers them (their size is
	// convState.unstoredBytes). inflight is the write under way.
	unstored []pendingAck
	inflight *storeBatch
}

// events returns the unstored events; none when s is nil.
func (s *storeState) events() []pendingAck {
	if s == nil {
		return nil
	}
	return s.unstored
}

// batch returns the write in flight; nil when s is nil.
func (s *storeState) batch() *storeBatch {
	if s == nil {
		return nil
	}
	return s.inflight
}

// startable reports whether a store can begin: events wait for one and no
// write is in flight (whose completion schedules the next). False when s
// is nil.
func (s *storeState) startable() bool { return len(s.events()) > 0 && s.batch() == nil }

// storeQueue returns st's store state, made when it has none.
func (st *convState) storeQueue() *storeState {
	if st.store == nil {
		st.store = new(storeState)
	}
	return st.store
}

// dropStore lets go of st's store state, which has nothing pending (st is
// settled), and of what goes with it.
func (st *convState) dropStore() {
	st.store, st.unstoredBytes, st.failures = nil, 0, 0
}

// clamp32 returns n as an int32, at most math.MaxInt32.
func clamp32(n int) int32 { return int32(min(n, math.MaxInt32)) }
