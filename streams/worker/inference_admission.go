package worker

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// DefaultInferenceQueue is how many inference and doctor requests may wait
// for a free worker (WithInferenceQueue) before more are refused busy.
const DefaultInferenceQueue = 64

// DefaultInferenceQueueWait is how long a request may wait for a free
// worker (WithInferenceQueueWait) before it is refused busy.
const DefaultInferenceQueueWait = time.Second

// DefaultInferenceWorkers returns how many inference and doctor requests
// run at once by default (WithInferenceWorkers): half the processors the
// Go scheduler uses, at least one, so that the lanes applying events
// always find a processor no request holds. On 2 cores, with 4,000
// requests at once beside live events, one worker kept the events' p99
// within 2x of the run without them, two did not
// (BenchmarkInferenceFlood).
func DefaultInferenceWorkers() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// admission bounds the requests the inference server serves: at most
// cap(running) at once, each on a goroutine of its own, never on a lane;
// at most cap(queued) more waiting for one of them, each for up to wait.
// A request past either bound is refused at once, one that waits too long
// when its wait ends: a client hears "busy" within the wait instead of
// queueing in the subscription for as long as the backlog takes
// (TestInferenceFloodBesideEvents).
type admission struct {
	running chan struct{} // a token per request being served
	queued  chan struct{} // a token per request waiting for a running one
	wait    time.Duration
}

func newAdmission(workers, queue int, wait time.Duration) *admission {
	return &admission{running: make(chan struct{}, workers), queued: make(chan struct{}, queue), wait: wait}
}

// admit runs serve on a goroutine of its own as soon as a worker is free,
// or calls refuse, with why, once the request cannot be served within the
// wait. It never blocks: the caller is the subscription's only goroutine.
// Exactly one of serve and refuse is called, then done.
func (a *admission) admit(ctx context.Context, serve func(), refuse func(why string), done func()) {
	select {
	case a.running <- struct{}{}:
		go func() {
			defer done()
			defer func() { <-a.running }()
			serve()
		}()
		return
	default:
	}
	select {
	case a.queued <- struct{}{}:
	default:
		defer done()
		refuse(fmt.Sprintf("%d inference requests running (--inference-workers) and %d waiting (--inference-queue)",
			cap(a.running), cap(a.queued)))
		return
	}
	go func() {
		defer done()
		t := time.NewTimer(a.wait)
		defer t.Stop()
		select {
		case a.running <- struct{}{}:
			<-a.queued
			defer func() { <-a.running }()
			serve()
		case <-t.C:
			<-a.queued
			refuse(fmt.Sprintf("no inference worker free within %v (--inference-queue-wait)", a.wait))
		case <-ctx.Done():
			<-a.queued
			refuse("worker shutting down")
		}
	}()
}

// retryAfter is the hint given with a refusal: by the end of one wait,
// every request waiting now has started or been refused.
func (a *admission) retryAfter() time.Duration { return a.wait }
