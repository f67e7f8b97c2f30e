package worker

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultAckWait is how long JetStream waits for a worker to acknowledge
// an event, or to say it is still working on it, before it redelivers the
// event, unless WithAckWait says otherwise. A worker that dies holds its
// events until then: with a minute, 40 conversations converged 58 s after
// a worker was killed and restarted, 5.6 s with 5 s
// (TestFailoverWithinSeconds, BenchmarkFailover). Events a live worker
// holds longer — queued behind a busy conversation, parked for a load,
// awaiting a store — are kept from redelivery by inProgress.
const DefaultAckWait = 3 * time.Second

// inProgress is the events a worker holds unacknowledged, by the subject
// their acknowledgement goes to, with how many beats ago each was taken.
// Every beat (a quarter of the ack wait) it tells JetStream that it is
// still working on those held two beats or more, so that none is redelivered
// while the worker lives, however long it waits for its lane, its load or
// its store (TestLongWorkIsNotRedelivered); one it settles is forgotten.
// An event is told about within two beats of its delivery, half the ack
// wait, and every beat after.
type inProgress struct {
	nc      *nats.Conn
	seed    maphash.Seed
	shards  [inProgressShards]inProgressShard
	beats   atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
	started atomic.Bool
	once    sync.Once
}

// inProgressShards spreads the held events over locks: the dispatchers
// hold, and every lane settles.
const inProgressShards = 16

type inProgressShard struct {
	mu   sync.Mutex
	held map[pendingAck]uint64 // the beat it was taken at
}

// progressBody is the body of a progress acknowledgement, as nats.go's
// jetstream.Msg.InProgress sends it.
var progressBody = []byte("+WPI")

func newInProgress(nc *nats.Conn) *inProgress {
	p := &inProgress{nc: nc, seed: maphash.MakeSeed(), stop: make(chan struct{}), done: make(chan struct{})}
	for i := range p.shards {
		p.shards[i].held = make(map[pendingAck]uint64)
	}
	return p
}

func (p *inProgress) shard(a pendingAck) *inProgressShard {
	return &p.shards[maphash.String(p.seed, string(a))%inProgressShards]
}

// hold counts a as held from now until settled.
func (p *inProgress) hold(a pendingAck) {
	if p == nil || a == "" {
		return
	}
	s := p.shard(a)
	s.mu.Lock()
	s.held[a] = p.beats.Load()
	s.mu.Unlock()
}

// settled forgets a: it was acknowledged, terminated or handed back.
func (p *inProgress) settled(a pendingAck) {
	if p == nil || a == "" {
		return
	}
	s := p.shard(a)
	s.mu.Lock()
	delete(s.held, a)
	s.mu.Unlock()
}

// run beats every period until stopped.
func (p *inProgress) run(ctx context.Context, period time.Duration) {
	defer close(p.done)
	t := time.NewTicker(max(period, time.Millisecond))
	defer t.Stop()
	var due []pendingAck
	for {
		select {
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		beat := p.beats.Add(1)
		for i := range p.shards {
			s := &p.shards[i]
			due = due[:0]
			s.mu.Lock()
			for a, at := range s.held {
				if beat-at >= 2 {
					due = append(due, a)
				}
			}
			s.mu.Unlock()
			for _, a := range due {
				// A lost one is redelivered after the ack wait, and applying
				// it again changes nothing.
				_ = a.publish(p.nc, progressBody)
			}
		}
	}
}

// start beats every quarter of ackWait until close.
func (p *inProgress) start(ctx context.Context, ackWait time.Duration) {
	if p.started.CompareAndSwap(false, true) {
		go p.run(ctx, ackWait/4)
	}
}

// close stops the beats and waits for the last one to end.
func (p *inProgress) close() {
	p.once.Do(func() { close(p.stop) })
	if p.started.Load() {
		<-p.done
	}
}
