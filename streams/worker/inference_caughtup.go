package worker

import (
	"context"
	"time"
)

// awaitCaughtUp calls read until the state it reads has handled every
// event of conversation id stored before the request (its sequence at or
// past the stream's last event of id), read says to stop (an error that
// waiting does not mend), or the inference wait ends; it reports whether
// the state caught up, and ctx's error when ctx ended first. Inference and
// diagnosis requests wait this way, so that a client that publishes and
// then asks sees its own events.
//
// The stream's last event is read again while the state lags: an event
// the worker rejects is removed from the stream, and the event before it
// is then the one to wait for. Reading it once made a request that
// followed a rejected event wait out the whole inference wait
// (TestRequestAfterRejectedEvent).
func (s *inferenceServer) awaitCaughtUp(ctx context.Context, id string, read func() (seq uint64, stop bool)) (bool, error) {
	target := s.lastStored(ctx, id)
	deadline := time.Now().Add(s.wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		seq, stop := read()
		if stop || seq >= target {
			return seq >= target, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(pause):
		}
		if pause >= 8*time.Millisecond {
			// Lagging for a while: the last event may have been rejected
			// (and removed) rather than be on its way.
			target = s.lastStored(ctx, id)
		}
	}
}
