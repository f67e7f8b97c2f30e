package streams

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
// only come from one that is up to date (directFirstEvent, a rebuild's
// batches); they are a few per conversation loaded, not per event.
func (w *Worker) leaderGet(ctx context.Context, stream string, req msgGetRequest) (*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// Short: the reads run on a lane, and while a stream elects a leader
	// nothing answers; the event is retried later instead of holding up the
	// lane (and, past the pinned TTL, its partitions).
	ctx, cancel := context.WithTimeout(ctx, leaderGetTimeout)
	defer cancel()
	reply, err := w.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("streams: get from %s: %w", stream, jetstream.ErrStreamNotFound)
		}
		return nil, fmt.Errorf("streams: get from %s: %w", stream, err)
	}
	resp, err := decodeMsgGet(reply.Data)
	if err != nil {
		return nil, fmt.Errorf("streams: get from %s: %w", stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == errCodeNoMessage {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, fmt.Errorf("streams: get from %s: %w", stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("streams: get from %s: %w", stream, jetstream.ErrInvalidJetStreamResponse)
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence,
		Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("streams: get from %s: %w", stream, err)
		}
	}
	return m, nil
}

// nextEvent returns the first stored event of conversation id at or after
// sequence from, read from the leader.
func (w *Worker) nextEvent(ctx context.Context, id string, from uint64) (*jetstream.RawStreamMsg, error) {
	return w.leaderGet(ctx, w.cfg.subjects.EventsStream(), msgGetRequest{Seq: max(from, 1), NextFor: w.eventSubject(id)})
}

// lastEvent returns the last stored event of conversation id, read from
// the leader.
func (w *Worker) lastEvent(ctx context.Context, id string) (*jetstream.RawStreamMsg, error) {
	return w.leaderGet(ctx, w.cfg.subjects.EventsStream(), msgGetRequest{LastFor: w.eventSubject(id)})
}

// kvOperation is the header a KV bucket marks deletes and purges with.
const kvOperation = "KV-Operation"

// readStored returns the stored snapshot of id and its revision, as the
// bucket's leader holds it; nil and 0 when there is none (or it was
// deleted). With direct set, it is read with a direct get, as the loads
// do from a bucket of one replica (see Worker.bucketOneReplica).
//
// That replica is the leader, and it answers a direct get without the
// JetStream API's queue, JSON or base64: in BenchmarkReadStored, 53–58 µs
// against 124–135 for a snapshot of 4 KiB, 4.4–4.7 ms against 15–16 for
// one of 2 MiB, 19–21 µs against 46–54 for a conversation with none
// (every new one).
// An answer from a mirror of the bucket that answers direct gets for it
// (MirrorDirect) is not taken: the leader is asked then. A mirror's
// "none" carries no name, so one that lags may say a new conversation has
// no snapshot: it is then rebuilt from its events, which make the same
// conversation, and its first write conflicts and reads the head from the
// leader (Worker.behind).
func (w *Worker) readStored(ctx context.Context, id string, direct bool) ([]byte, uint64, error) {
	bucket := w.cfg.subjects.SnapshotBucket()
	stream, req := "KV_"+bucket, msgGetRequest{LastFor: "$KV." + bucket + "." + id}
	var m *jetstream.RawStreamMsg
	var err error
	if direct {
		var from string
		if m, from, err = w.directGet(ctx, stream, req); err == nil && from != stream {
			m, err = w.leaderGet(ctx, stream, req)
		}
	} else {
		m, err = w.leaderGet(ctx, stream, req)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("streams: read snapshot %s: %w", id, err)
	}
	if op := m.Header.Get(kvOperation); op == "DEL" || op == "PURGE" {
		return nil, 0, nil
	}
	return m.Data, m.Sequence, nil
}

// oneReplica reports whether the bucket kv is one replica that answers
// direct gets: a direct get from it is as current as a get from its
// leader. Replicas raised while the worker runs are seen at its next
// start; until then a replica that lags may answer, with the effects of a
// lagging mirror (see readStored).
func oneReplica(ctx context.Context, kv jetstream.KeyValue) bool {
	status, err := kv.Status(ctx)
	if err != nil {
		return false
	}
	info, ok := status.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return false
	}
	cfg := info.StreamInfo().Config
	return cfg.Replicas <= 1 && cfg.AllowDirect && cfg.Mirror == nil && len(cfg.Sources) == 0
}
