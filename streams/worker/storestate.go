package worker

import "math"

// storeState is what a conversation's state holds while its events go to
// the bucket: the events published and not yet covered by a stored
// snapshot, and the write in flight. A state has one from an event until a
// write leaves nothing pending (or the cache compacts it), so that a
// conversation at rest, most of a cache, does not hold it. It is a slice
// and a pointer, 32 bytes. The rest of what a pending store needs (its due
// and retry times, the events' size, the failures) sits in the state
// itself, in padding and narrowed fields (see convState): kept here, in a
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
