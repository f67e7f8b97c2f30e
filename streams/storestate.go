package streams

import "time"

// storeState is what a conversation's state holds while its events go to
// the bucket: the events published and not yet covered by a stored
// snapshot, the write in flight, when the next one is due and the count
// of failed writes. A state has one from an event until a write leaves
// nothing pending (or the cache compacts it), so that a conversation at
// rest, most of a cache, does not hold it (TestShortConversations).
type storeState struct {
	// unstored are the events published since the last store began,
	// acknowledged once a store covers them; bytes is their size. inflight
	// is the write under way.
	unstored []pendingAck
	bytes    int
	inflight *storeBatch
	// at is when the queued store runs, on the lane's clock (moved
	// forward when a store falls due earlier); retryAt is set when a failed
	// or outdated write is to be retried at a given time.
	at, retryAt time.Time
	// failures counts writes in a row that failed transiently (the server
	// away, a timeout); the next try waits longer each time.
	failures int
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
