package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"
)

// DefaultEraseTimeout bounds one erasure, unless WithEraseTimeout says
// otherwise (see streams.DefaultEraseTimeout).
const DefaultEraseTimeout = streams.DefaultEraseTimeout

// WithEraseTimeout bounds how long the worker spends on one erasure; one
// that runs out answers with the error, and asked again erases what is
// left.
func WithEraseTimeout(d time.Duration) Option { return func(c *config) { c.eraseTimeout = d } }

// eraseInFlight is how many secure deletes an erasure has in flight.
const eraseInFlight = 4

// forgetQuiet is how long the worker erasing a conversation waits, after
// the last worker answered its Forget, for another to answer; forgetWait
// bounds the whole wait. A worker answers once its lane ran what was
// queued before the Forget: well under forgetQuiet unless it is
// overloaded, and an answer that comes late still means it dropped the
// conversation, only after the erasure went on (see the second pass in
// erase).
const (
	forgetQuiet = 300 * time.Millisecond
	forgetWait  = 5 * time.Second
)

// eraser erases conversations (streams.EraseRequest): it answers
// erasures on the worker's queue group, and Forget on its own
// subscription. It reaches the lanes only through forget.
type eraser struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	subjects streams.Subjects
	queue    string // the workers' queue group
	worker   string // the worker's id, for receipts
	// partitions is the events stream's partition count (0: none).
	partitions int
	timeout    time.Duration
	log        *slog.Logger
	// forget drops conversation id, erased up to stream sequence cut,
	// from the worker's memory, once what was queued on its lane before
	// has run.
	forget func(ctx context.Context, id string, cut uint64) error
	// misdirected paces the warning of an answer not sent because its
	// reply subject is outside the worker's inbox (streams.Answerable), as
	// the inference service paces its own: a client can ask for many.
	misdirected rate.Sometimes

	subs []*nats.Subscription
	wg   sync.WaitGroup
}

// start provisions the receipts stream and subscribes; requests are
// served under ctx until stop.
func (e *eraser) start(ctx context.Context, st Storage) error {
	want := streams.ReceiptsStreamConfig(e.subjects)
	events := st.streamConfig(e.subjects)
	want.Replicas, want.Placement = events.Replicas, events.Placement
	if _, err := e.js.Stream(ctx, want.Name); errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err = e.js.CreateStream(ctx, want); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("worker: receipts stream %s: %w", want.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("worker: receipts stream %s: %w", want.Name, err)
	}
	erase, err := e.nc.QueueSubscribe(e.subjects.AllErase(), e.queue, func(m *nats.Msg) {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.serve(ctx, m)
		}()
	})
	if err != nil {
		return fmt.Errorf("worker: erase subscription: %w", err)
	}
	forget, err := e.nc.Subscribe(e.subjects.AllForget(), func(m *nats.Msg) {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.serveForget(ctx, m)
		}()
	})
	if err != nil {
		_ = erase.Unsubscribe()
		return fmt.Errorf("worker: forget subscription: %w", err)
	}
	e.subs = []*nats.Subscription{erase, forget}
	return nil
}

// stop unsubscribes and waits for the erasures in progress.
func (e *eraser) stop() {
	if e == nil {
		return
	}
	for _, s := range e.subs {
		_ = s.Unsubscribe()
	}
	e.wg.Wait()
}

// serve answers one erasure request with an EraseResponse.
func (e *eraser) serve(ctx context.Context, m *nats.Msg) {
	var resp streams.EraseResponse
	id, ok := e.subjects.ConversationOf("erase", m.Subject)
	var req streams.EraseRequest
	switch {
	case !ok:
		resp.Error = fmt.Sprintf("%s: subject %q names no valid conversation id", streams.CodeBadSubject, m.Subject)
	case len(m.Data) > 0 && json.Unmarshal(m.Data, &req) != nil:
		resp.Error = string(streams.CodeBadData) + ": an erase request is a JSON object such as {\"by\":\"…\"}"
	default:
		ctx, cancel := context.WithTimeout(ctx, e.timeout)
		receipt, err := e.erase(ctx, id, req)
		cancel()
		if err != nil {
			e.log.ErrorContext(ctx, "conversation not erased", "conversation", id, "err", err)
			resp.Error = err.Error()
		} else {
			e.log.InfoContext(ctx, "conversation erased", "conversation", id, "by", req.By, "erased", receipt.Erased)
			resp.Receipt = receipt
		}
	}
	b, err := json.Marshal(resp)
	switch {
	case err != nil:
	case !streams.Answerable(m.Reply, streams.ConnInbox(e.nc)):
		// Only into the worker's inbox (streams.Answerable); the
		// receipt is kept in the receipts stream either way.
		if m.Reply != "" {
			e.misdirected.Do(func() {
				e.log.WarnContext(ctx, "erase answer not sent: its reply subject is outside this worker's inbox (warned of at most once a minute)",
					"subject", m.Subject, "reply", m.Reply, "inbox", streams.ConnInbox(e.nc))
			})
		}
	default:
		err = m.Respond(b)
	}
	if err != nil {
		e.log.WarnContext(ctx, "erase answer not sent", "subject", m.Subject, "err", err)
	}
}

// erase erases conversation id and publishes its receipt. The workers
// drop it first, so that none stores what it held after the stores are
// erased; the events go next, so that a worker loading the conversation
// meanwhile finds none; then the workers drop it again (what a read or an
// event loaded in between), and its snapshot and checkpoint go last, with
// any write of them that was under way.
func (e *eraser) erase(ctx context.Context, id string, req streams.EraseRequest) (*streams.EraseReceipt, error) {
	r := &streams.EraseReceipt{Format: streams.ReceiptFormat, Conversation: id, By: req.By, Worker: e.worker}
	c := &r.Erased
	s := e.subjects
	// The cut: what the workers hold of the conversation up to here is
	// erased, and a checkpoint of it queued before is not written.
	events, err := e.js.Stream(ctx, s.EventsStream())
	if err != nil {
		return nil, fmt.Errorf("worker: erasing: %w", err)
	}
	info, err := events.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("worker: erasing: %w", err)
	}
	cut := info.State.LastSeq
	if c.Workers, err = e.forgetAll(ctx, id, cut); err != nil {
		return nil, err
	}
	steps := []struct {
		stream, subject string
		count           *int
	}{
		{s.EventsStream(), s.StoredEvents(id, e.partitions), &c.Events},
		{s.EventsStream(), s.StoredChunks(id, e.partitions), &c.Chunks},
		{s.RepliesStream(), s.Replies(id), &c.Replies},
		{s.ErrorsStream(), s.Errors(id), &c.Errors},
		{"KV_" + s.SnapshotBucket(), s.SnapshotKey(id), &c.Snapshots},
		{"KV_" + s.CheckpointBucket(), "$KV." + s.CheckpointBucket() + "." + id, &c.Checkpoints},
	}
	for i, step := range steps {
		if i == 4 { // the buckets: see above
			if _, err := e.forgetAll(ctx, id, cut); err != nil {
				return nil, err
			}
		}
		n, secure, err := e.eraseSubject(ctx, step.stream, step.subject)
		*step.count += n
		if err != nil {
			return nil, err
		}
		if !secure && n > 0 {
			e.log.WarnContext(ctx, "erased messages purged, not overwritten: the stream denies deletes", "conversation", id, "stream", step.stream)
			r.PurgedOnly = append(r.PurgedOnly, step.stream)
		}
	}
	r.ErasedAt = time.Now().UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if _, err := e.js.Publish(ctx, s.Receipts(id), b); err != nil {
		return nil, fmt.Errorf("worker: erased, but the receipt was not stored (ask again to store one): %w", err)
	}
	return r, nil
}

// eraseSubject securely deletes every message stream holds under
// subject, oldest first, and returns how many it deleted. A secure
// delete overwrites the message's bytes in its block file on every
// replica, where a purge or a plain delete leaves them until the block is
// compacted (nats-server's fileStore.removeMsg and PurgeEx). A stream
// that does not exist holds nothing. A stream that denies deletes (a
// bucket made by nats.go's CreateKeyValue, see createBucket) is purged
// instead, and secure is false.
func (e *eraser) eraseSubject(ctx context.Context, stream, subject string) (n int, secure bool, err error) {
	st, err := e.js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("worker: erasing from %s: %w", stream, err)
	}
	secure = !st.CachedInfo().Config.DenyDelete
	var seqs []uint64
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return 0, secure, fmt.Errorf("worker: erasing from %s: reading %s after %d: %w", stream, subject, seq, err)
		}
		seqs = append(seqs, m.Sequence)
		seq = m.Sequence + 1
	}
	if len(seqs) == 0 {
		return 0, secure, nil
	}
	if !secure {
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return 0, secure, fmt.Errorf("worker: erasing from %s: purging %s: %w", stream, subject, err)
		}
		return len(seqs), secure, nil
	}
	// A few deletes in flight: the server applies them one at a time,
	// and the round trips overlap (BenchmarkErase).
	err = deleteEach(seqs, eraseInFlight, func(seq uint64) error {
		if err := st.SecureDeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("worker: erasing from %s: message %d: %w", stream, seq, err)
		}
		return nil
	})
	if err != nil {
		return 0, secure, err
	}
	return len(seqs), secure, nil
}

// forgetAll asks every worker to drop conversation id, up to stream
// sequence cut, from memory and
// returns how many answered that they did. It waits for answers until
// none came for forgetQuiet, at most forgetWait; at least one (this
// worker's own) must come.
func (e *eraser) forgetAll(ctx context.Context, id string, cut uint64) (int, error) {
	inbox := e.nc.NewRespInbox()
	answers := make(chan struct{}, 64)
	sub, err := e.nc.Subscribe(inbox, func(*nats.Msg) {
		select {
		case answers <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return 0, fmt.Errorf("worker: asking the workers to forget: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := e.nc.PublishRequest(e.subjects.Forget(id), inbox, strconv.AppendUint(nil, cut, 10)); err != nil {
		return 0, fmt.Errorf("worker: asking the workers to forget: %w", err)
	}
	deadline := time.NewTimer(forgetWait)
	defer deadline.Stop()
	n := 0
	for {
		var quiet <-chan time.Time
		if n > 0 {
			quiet = time.After(forgetQuiet)
		}
		select {
		case <-answers:
			n++
			continue
		case <-quiet:
		case <-deadline.C:
		case <-ctx.Done():
			return n, fmt.Errorf("worker: asking the workers to forget: %w", ctx.Err())
		}
		if n == 0 {
			return 0, errors.New("worker: no worker answered the request to forget the conversation, not even this one")
		}
		return n, nil
	}
}

// serveForget drops the conversation of a Forget from the worker's
// memory and answers once it has.
func (e *eraser) serveForget(ctx context.Context, m *nats.Msg) {
	id, ok := e.subjects.ConversationOf("forget", m.Subject)
	cut, err := strconv.ParseUint(string(m.Data), 10, 64)
	if !ok || err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, forgetWait)
	defer cancel()
	if err := e.forget(ctx, id, cut); err != nil {
		e.log.WarnContext(ctx, "conversation to erase not dropped from memory", "conversation", id, "err", err)
		return
	}
	if streams.Answerable(m.Reply, streams.ConnInbox(e.nc)) {
		_ = m.Respond(nil)
	}
}

// forgetConversation drops conversation id, erased up to stream
// sequence cut, from its lane's cache, after what was queued on the lane
// before: events not stored yet are handed back (release), and find
// nothing to apply to once erased; a checkpoint of it queued is not
// written (erasures).
func (w *Worker) forgetConversation(ctx context.Context, id string, cut uint64) error {
	w.erasures.add(id, cut)
	l := w.lanes.pick(id)
	done := make(chan struct{})
	if err := w.lanes.barrier(l, func() {
		defer close(done)
		l.cache.Drop(id)
	}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// erasuresKept is how long a worker remembers an erasure, for the
// checkpoint writes queued before it (they wait for a slot seconds at
// most).
const erasuresKept = 10 * time.Minute

// erasures holds the conversations erased lately, each with its cut:
// the last stream sequence the erasure covers.
type erasures struct {
	mu   sync.Mutex
	cuts map[string]erasureCut
}

type erasureCut struct {
	seq uint64
	at  time.Time
}

// add records that conversation id was erased up to seq, and forgets
// the erasures older than erasuresKept.
func (e *erasures) add(id string, seq uint64) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cuts == nil {
		e.cuts = map[string]erasureCut{}
	}
	for k, c := range e.cuts {
		if now.Sub(c.at) > erasuresKept {
			delete(e.cuts, k)
		}
	}
	if c, ok := e.cuts[id]; !ok || seq > c.seq {
		e.cuts[id] = erasureCut{seq: seq, at: now}
	}
}

// covers reports whether conversation id at stream sequence seq was
// erased since: a state no later than the cut of an erasure of it.
func (e *erasures) covers(id string, seq uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.cuts[id]
	return ok && seq <= c.seq
}

// startErasing starts answering erasures; the returned func stops it.
func (w *Worker) startErasing(ctx context.Context) (stop func(), err error) {
	e := &eraser{nc: w.nc, js: w.js, subjects: w.cfg.subjects, queue: w.cfg.consumer, worker: w.id,
		partitions: w.partitions(), timeout: w.cfg.eraseTimeout, log: w.cfg.logger, forget: w.forgetConversation,
		misdirected: rate.Sometimes{First: 1, Interval: time.Minute}}
	if err := e.start(ctx, w.cfg.storage); err != nil {
		return nil, err
	}
	return e.stop, nil
}
