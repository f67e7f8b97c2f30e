package streams

import (
	"context"
	"encoding/json"
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
// conversation asks it: BENCHMARKS.md, "Session of 2026-12-02, 06:20 UTC".
func (w *Worker) directFirstEvent(ctx context.Context, id string) (*jetstream.RawStreamMsg, error) {
	stream := w.cfg.subjects.EventsStream()
	req, err := json.Marshal(msgGetRequest{Seq: 1, NextFor: w.eventSubject(id)})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, leaderGetTimeout)
	defer cancel()
	m, err := w.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("streams: direct get from %s: %w", stream, err)
	}
	none, err := directStatus(m)
	if err != nil {
		return nil, fmt.Errorf("streams: direct get from %s: %w", stream, err)
	}
	if none {
		return nil, nil
	}
	raw, err := storedFromDirect(m)
	if err != nil {
		return nil, fmt.Errorf("streams: direct get from %s: %w", stream, err)
	}
	return raw, nil
}
