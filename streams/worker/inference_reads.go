package worker

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// The worker's side of the inference server: what a request reads of the
// worker's conversations, handed to the server as func values (New) so
// that it reaches neither the lanes nor the events stream itself.

// errNotHeld is returned by readOnLane when no state of the conversation
// could be read on its lane.
var errNotHeld = errors.New("worker: conversation not held")

// lastStoredSeq returns the stream sequence of the last event of
// conversation id (0: none, or it could not be read): what a read waits to
// see applied, so that a client reads its own writes.
func (w *Worker) lastStoredSeq(ctx context.Context, id string) uint64 {
	last, err := w.stream.GetLastMsgForSubject(ctx, w.eventSubject(id))
	if err == nil {
		return last.Sequence
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		w.cfg.logger.WarnContext(ctx, "reading the last event of a conversation", "conversation", id, "err", err)
	}
	return 0
}

// readOnLane runs fn, on the lane of conversation id, on its state: the
// lane's copy, else (see stateForRead) one loaded here first, off the lane,
// which goes on with its other conversations meanwhile. fn reports whether
// it changed what the state weighs (the walk of a compacted conversation
// rebuilds its index), for the lane's cache to count. The error is the
// read's own, not fn's: ErrUnknownConversation when nothing is stored, or
// the lane's when the call was not run, and fn may still run later: what
// it writes must not be read then.
func (w *Worker) readOnLane(ctx context.Context, id string, fn func(st *convState) (resized bool)) error {
	l := w.lanes.pick(id)
	var pre *convState
	var lets uint64
	for range 2 {
		held := false
		callErr := w.lanes.call(ctx, l, func() {
			st := w.stateForRead(l, id, pre, lets)
			if st == nil {
				lets = l.cache.Lets()
				return
			}
			held = true
			if fn(st) {
				l.cache.Resize(st)
			}
		})
		if callErr != nil {
			return callErr
		}
		if held {
			return nil
		}
		var err error
		if pre, err = w.loadForRead(ctx, id); err != nil {
			return err
		}
	}
	return errNotHeld
}
