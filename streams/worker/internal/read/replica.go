package read

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrBatchUnsupported is returned by a batched read (EventBatch) when the
// server answered it with a single message: a server older than 2.11.
var ErrBatchUnsupported = errors.New("read: batched direct get not supported by the server")

// Headers a batched direct get adds to every stored message it returns;
// they are taken off again, so that an event read back weighs what it
// weighed when it was delivered (the event size limit counts headers).
var directGetHeaders = []string{
	jetstream.StreamHeader, jetstream.SubjectHeader, jetstream.SequenceHeader,
	jetstream.TimeStampHeaer, jetstream.LastSequenceHeader, headerNumPending,
}

// headerNumPending is the header of a batched direct get's answer that
// counts the messages of the subject the answering replica held after the
// one it carries.
const headerNumPending = "Nats-Num-Pending"

// replicaQuietTimeout bounds how long a direct get waits for a replica's
// first answer. A direct get goes to one replica of the stream's queue
// group, and one on a frozen server (still a member until its routes are
// found dead) never answers: the read is asked again, and goes to another,
// after this rather than leaderGetTimeout, while a replica that answers
// at all answers at once from its own store. With 2 s a try, rebuilds
// after a server froze waited out tries in a row (BenchmarkClusterFaults).
const replicaQuietTimeout = time.Second

// replicaHedgeAfter is how long a direct get waits for its replica before
// it asks again, while still waiting for the first: the second request
// goes to a replica picked again, so a frozen one costs this instead of
// replicaQuietTimeout and a read asked again. It does so only within
// hedgeWindow of a direct get that went unanswered: asked twice always, a
// saturated worker's slow answers doubled its reads, and flat out it
// applied 10-16% fewer events in two make -C bench load-compare pairs.
const replicaHedgeAfter = 200 * time.Millisecond

// hedgeWindow is how long after a direct get went unanswered the reader
// asks each direct get twice: a frozen replica stays in the queue group
// until its server's routes are found dead.
const hedgeWindow = 30 * time.Second

// quiet records that a direct get went unanswered.
func (r *Reader) quiet() { r.quietAt.Store(time.Now().UnixNano()) }

// hedging reports whether a direct get went unanswered within hedgeWindow.
func (r *Reader) hedging() bool {
	at := r.quietAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < hedgeWindow
}

// directGet reads one message of stream with a direct get, answered by any
// replica of it or by a mirror of it that answers direct gets for it
// (MirrorDirect); from is the name of the stream that answered.
// jetstream.ErrMsgNotFound when it holds none.
func (r *Reader) directGet(ctx context.Context, stream string, req msgGetRequest) (m *jetstream.RawStreamMsg, from string, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, "", err
	}
	answer, err := r.hedgedRequest(ctx, "$JS.API.DIRECT.GET."+stream, body)
	if err != nil {
		return nil, "", fmt.Errorf("read: direct get from %s: %w", stream, err)
	}
	none, err := directStatus(answer)
	if err != nil {
		return nil, "", fmt.Errorf("read: direct get from %s: %w", stream, err)
	}
	if none {
		return nil, "", jetstream.ErrMsgNotFound
	}
	from = answer.Header.Get(jetstream.StreamHeader)
	if m, err = storedFromDirect(answer); err != nil {
		return nil, "", fmt.Errorf("read: direct get from %s: %w", stream, err)
	}
	return m, from, nil
}

// hedgedRequest sends a request answered by any one replica and returns
// the first answer within replicaQuietTimeout, asking a second time, in
// parallel, if none came within replicaHedgeAfter while hedging
// (TestDirectGetHedgesAFrozenReplica).
func (r *Reader) hedgedRequest(ctx context.Context, subject string, body []byte) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, replicaQuietTimeout)
	defer cancel() // ends the request still waiting
	if !r.hedging() {
		// One request, on the caller's goroutine: the usual case costs no
		// goroutine or timer.
		m, err := r.nc.RequestWithContext(ctx, subject, body)
		if errors.Is(err, context.DeadlineExceeded) {
			r.quiet()
		}
		return m, err
	}
	type result struct {
		m   *nats.Msg
		err error
	}
	results := make(chan result, 2)
	ask := func() {
		m, err := r.nc.RequestWithContext(ctx, subject, body)
		results <- result{m, err}
	}
	go ask()
	hedge := time.NewTimer(replicaHedgeAfter)
	defer hedge.Stop()
	hedgeC, pending := hedge.C, 1
	again := func() {
		hedgeC = nil // a request is asked twice at most
		pending++
		go ask()
	}
	for {
		select {
		case <-hedgeC:
			again()
		case res := <-results:
			pending--
			switch {
			case res.err == nil:
				return res.m, nil
			case hedgeC != nil && ctx.Err() == nil:
				again() // failed before the hedge: ask the second time now
			case pending == 0:
				if errors.Is(res.err, context.DeadlineExceeded) {
					r.quiet()
				}
				return nil, res.err
			}
		}
	}
}

// directBatch reads up to batch messages of stream on subject, from
// sequence from on, in one batched direct get (answered by any one replica
// of the stream, which may lag behind its leader). It calls fn with each
// message, its headers as stored, and the replica's count of the
// subject's messages after it; fn returns false to stop early. Reaching
// the end of the subject is not an error.
//
// It does what jetstreamext.GetBatch (synadia-io/orbit.go) does, on a
// channel sized to the batch: that function's synchronous subscription
// allocates the connection's default channel of 65,536 messages (512 KiB)
// for every read, which a burst of rebuilds turned into most of the
// garbage it made.
func (r *Reader) directBatch(ctx context.Context, stream, subject string, from uint64, batch, maxBytes int,
	fn func(m *jetstream.RawStreamMsg, pending uint64) bool) error {
	req, err := json.Marshal(msgGetRequest{Seq: max(from, 1), NextFor: subject, Batch: batch, MaxBytes: maxBytes})
	if err != nil {
		return err
	}
	// Every answer and the end-of-batch marker fit: a full channel would
	// drop messages (a slow consumer) instead of waiting.
	ask := func() (chan *nats.Msg, *nats.Subscription, error) {
		answers := make(chan *nats.Msg, batch+1)
		inbox := r.nc.NewInbox()
		sub, err := r.nc.ChanSubscribe(inbox, answers)
		if err != nil {
			return nil, nil, fmt.Errorf("read: batched get from %s: %w", stream, err)
		}
		if err := r.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
			_ = sub.Unsubscribe()
			return nil, nil, fmt.Errorf("read: batched get from %s: %w", stream, err)
		}
		return answers, sub, nil
	}
	answers, sub, err := ask()
	if err != nil {
		return err
	}
	// The second request of a hedged read (hedgedRequest), on an inbox of
	// its own: the replica that answers first is the one read.
	var spare chan *nats.Msg
	var spareSub *nats.Subscription
	defer func() {
		for _, s := range []*nats.Subscription{sub, spareSub} {
			if s != nil {
				_ = s.Unsubscribe()
			}
		}
	}()
	// As for a leader get: a replica that goes quiet fails the read, and the
	// event that needed it is retried later, rather than holding the lane.
	// The first answer comes within replicaQuietTimeout from a replica
	// that is up; the whole batch within leaderGetTimeout.
	ctx, cancel := context.WithTimeout(ctx, leaderGetTimeout)
	defer cancel()
	quiet := time.NewTimer(replicaQuietTimeout)
	defer quiet.Stop()
	var hedgeC <-chan time.Time // nil unless hedging: no second request
	if r.hedging() {
		hedge := time.NewTimer(replicaHedgeAfter)
		defer hedge.Stop()
		hedgeC = hedge.C
	}
	got := false
	for {
		var m *nats.Msg
		select {
		case <-ctx.Done():
			return fmt.Errorf("read: batched get from %s: %w", stream, ctx.Err())
		case <-quiet.C:
			if !got {
				r.quiet()
				return fmt.Errorf("read: batched get from %s: no answer in %v: %w", stream, replicaQuietTimeout, context.DeadlineExceeded)
			}
			continue
		case <-hedgeC:
			hedgeC = nil
			if spare, spareSub, err = ask(); err != nil {
				return err
			}
			continue
		case m = <-answers:
		case m = <-spare: // nil until the hedge
			answers, spare = spare, answers
			sub, spareSub = spareSub, sub
		}
		if !got {
			got, hedgeC = true, nil
			if spareSub != nil { // the slower replica's answers are not read
				_ = spareSub.Unsubscribe()
				spare, spareSub = nil, nil
			}
		}
		none, err := directStatus(m)
		if err != nil {
			return fmt.Errorf("read: batched get from %s: %w", stream, err)
		}
		if none { // the end of the batch
			return nil
		}
		pending, err := strconv.ParseUint(m.Header.Get(headerNumPending), 10, 64)
		if err != nil {
			return ErrBatchUnsupported
		}
		raw, err := storedFromDirect(m)
		if err != nil {
			return fmt.Errorf("read: batched get from %s: %w", stream, err)
		}
		if !fn(raw, pending) {
			return nil
		}
	}
}

// directStatus reads the status of a direct get's answer that carries no
// message: none is true when there is nothing (more) to read (204, 404);
// a stream that is not there (503) or any other status is an error. An
// answer that carries a message has neither.
func directStatus(m *nats.Msg) (none bool, err error) {
	status := m.Header.Get("Status")
	if len(m.Data) > 0 || status == "" {
		return false, nil
	}
	switch status {
	case "204", "404":
		return true, nil
	case "503":
		return false, jetstream.ErrStreamNotFound
	}
	return false, fmt.Errorf("%s %s", status, m.Header.Get("Description"))
}

// storedFromDirect returns the stored message a direct get's answer
// carries, with the headers it was stored with.
func storedFromDirect(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: sequence %q", jetstream.ErrInvalidJetStreamResponse, m.Header.Get(jetstream.SequenceHeader))
	}
	ts, err := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("%w: time stamp: %w", jetstream.ErrInvalidJetStreamResponse, err)
	}
	raw := &jetstream.RawStreamMsg{Subject: m.Header.Get(jetstream.SubjectHeader), Sequence: seq, Data: m.Data, Time: ts}
	for _, k := range directGetHeaders {
		m.Header.Del(k)
	}
	if len(m.Header) > 0 {
		raw.Header = m.Header
	}
	return raw, nil
}
