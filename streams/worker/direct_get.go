package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// directFirstEvent returns the first event of conversation id that one
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
// replica"). TestDirectFirstEvent checks what it returns.
func (w *Worker) directFirstEvent(ctx context.Context, id string) (*jetstream.RawStreamMsg, error) {
	m, _, err := w.directGet(ctx, w.cfg.subjects.EventsStream(), msgGetRequest{Seq: 1, NextFor: w.eventSubject(id)})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// directGet reads one message of stream with a direct get, answered by any
// replica of it or by a mirror of it that answers direct gets for it
// (MirrorDirect); from is the name of the stream that answered.
// jetstream.ErrMsgNotFound when it holds none.
func (w *Worker) directGet(ctx context.Context, stream string, req msgGetRequest) (m *jetstream.RawStreamMsg, from string, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, leaderGetTimeout)
	defer cancel()
	answer, err := w.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, body)
	if err != nil {
		return nil, "", fmt.Errorf("streams: direct get from %s: %w", stream, err)
	}
	none, err := directStatus(answer)
	if err != nil {
		return nil, "", fmt.Errorf("streams: direct get from %s: %w", stream, err)
	}
	if none {
		return nil, "", jetstream.ErrMsgNotFound
	}
	from = answer.Header.Get(jetstream.StreamHeader)
	if m, err = storedFromDirect(answer); err != nil {
		return nil, "", fmt.Errorf("streams: direct get from %s: %w", stream, err)
	}
	return m, from, nil
}
