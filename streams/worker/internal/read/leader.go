package read

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderGetTimeout bounds one read from a stream's leader.
const leaderGetTimeout = 2 * time.Second

// msgGetRequest is the JetStream API's request for stored messages: one,
// or with Batch a run of them (direct gets only).
type msgGetRequest struct {
	Seq      uint64 `json:"seq,omitempty"`
	LastFor  string `json:"last_by_subj,omitempty"`
	NextFor  string `json:"next_by_subj,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
}

// msgGetResponse is its answer.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// errCodeNoMessage is the API error code of a get that found nothing.
const errCodeNoMessage = 10037

// leaderGet reads one message of a stream from the stream's leader.
//
// The client library reads a stream that allows direct gets (the events
// stream, every KV bucket) from whichever replica answers first, and a
// follower may not have applied what the leader acknowledged a moment ago.
// A worker taking over a partition must see what its predecessor stored
// and every event before the one it applies, so the reads that decide what
// a conversation holds go to the leader, unless a replica's answer can
// only come from one that is up to date (DirectFirstEvent, EventBatch) or
// the leader confirms it (Confirmed); they are a few per conversation
// loaded, not per event.
func (r *Reader) leaderGet(ctx context.Context, stream string, req msgGetRequest) (*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// Short: the reads run on a lane, and while a stream elects a leader
	// nothing answers; the event is retried later instead of holding up the
	// lane (and, past the pinned TTL, its partitions).
	ctx, cancel := context.WithTimeout(ctx, leaderGetTimeout)
	defer cancel()
	reply, err := r.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("read: get from %s: %w", stream, jetstream.ErrStreamNotFound)
		}
		return nil, fmt.Errorf("read: get from %s: %w", stream, err)
	}
	resp, err := decodeMsgGet(reply.Data)
	if err != nil {
		return nil, fmt.Errorf("read: get from %s: %w", stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == errCodeNoMessage {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, fmt.Errorf("read: get from %s: %w", stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("read: get from %s: %w", stream, jetstream.ErrInvalidJetStreamResponse)
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence,
		Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("read: get from %s: %w", stream, err)
		}
	}
	return m, nil
}
