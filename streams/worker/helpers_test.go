package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/schemas"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// testLogger logs to the test when -v is given, and discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// failureLogger logs to the test when -v is given; otherwise it keeps the
// records at Info and above, and the test prints the last limit of them if
// it fails, so that a failure seen only in CI comes with what the workers
// did.
func failureLogger(t testing.TB, limit int) *slog.Logger {
	if testing.Verbose() {
		return testLogger(t)
	}
	rec := &recordedLines{max: limit}
	t.Cleanup(func() {
		if t.Failed() {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			t.Logf("the workers' last %d log records:\n%s", len(rec.lines), strings.Join(rec.lines, ""))
		}
	})
	return slog.New(slog.NewTextHandler(rec, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// recordedLines keeps the last max lines written to it.
type recordedLines struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (r *recordedLines) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) == r.max {
		r.lines = append(r.lines[:0], r.lines[1:]...)
	}
	r.lines = append(r.lines, string(p))
	return len(p), nil
}

// startServer starts an embedded JetStream server on a free loopback port
// with its store in dir (a fresh temporary directory when empty).
func startServer(t testing.TB, dir string) *server.Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

func connect(t testing.TB, ns *server.Server) *nats.Conn {
	t.Helper()
	// A dropped message names the test and its subscription (nats.go's
	// own line names neither); stderr, as the callback may come after
	// the test ended.
	name := t.Name()
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			fmt.Fprintf(os.Stderr, "%s: NATS async error on %q: %v\n", name, subject, err)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// running is a worker started by startWorker.
type running struct {
	w      *Worker
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error
}

// stop cancels the worker and waits for Run to return.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("Run: %v", r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not stop")
	}
}

// startWorker runs a worker on nc until the test ends (or stop).
func startWorker(t testing.TB, nc *nats.Conn, opts ...Option) *running {
	t.Helper()
	opts = append([]Option{WithLogger(testLogger(t))}, opts...)
	w, err := New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, cancel: cancel, done: make(chan struct{})}
	go func() { r.err = w.Run(ctx); close(r.done) }()
	t.Cleanup(func() { cancel(); <-r.done })
	// A fresh cluster may take a while to elect its leaders (Run waits for
	// them); a Run that returns instead fails the test with its error.
	deadline := time.Now().Add(30 * time.Second)
	for w.Ready() != nil {
		select {
		case <-r.done:
			t.Fatalf("worker stopped before it was ready: %v", r.err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for worker ready: %v", w.Ready())
		}
	}
	return r
}

// provisionedWorker returns a worker on nc that is not running, with its
// stream and bucket provisioned (as its WithStorage says): a test drives
// its parts directly.
func provisionedWorker(t testing.TB, nc *nats.Conn, opts ...Option) *Worker {
	t.Helper()
	w, err := New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if w.stream, w.snapshots.kv, err = Provision(context.Background(), w.js, w.cfg.subjects, w.cfg.storage, nil); err != nil {
		t.Fatal(err)
	}
	w.reads = read.New(context.Background(), readConfig(w.nc, w.cfg, w.stream, w.snapshots.kv))
	if w.cfg.checkpoints {
		bucket, err := provisionCheckpoints(context.Background(), w.js, w.cfg.subjects, w.cfg.storage, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.cp = newCheckpointer(bucket, w.writers, w.metrics, w.cfg.logger, w.nc.MaxPayload, w.cfg.checkpointsWaiting,
			w.cfg.limits.conversationOptions())
	}
	return w
}

func newClient(t testing.TB, nc *nats.Conn, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkStored waits for the stored snapshot of each conversation of want
// to catch up, and requires it to equal Parse of the conversation.
func checkStored(t testing.TB, c *client.Client, want map[string]*conversation.Conversation, timeout time.Duration) {
	t.Helper()
	last := map[string]uint64{}
	for conv := range want {
		last[conv] = lastEventSeq(t, c, conv)
	}
	checkStoredAt(t, c, want, last, timeout)
}

// checkStoredAt is checkStored with each conversation's last event given
// (as its publish acknowledged it): in a cluster, the stream's last event
// read back (lastEventSeq) may come from a replica behind the leader.
func checkStoredAt(t testing.TB, c *client.Client, want map[string]*conversation.Conversation, last map[string]uint64, timeout time.Duration) {
	t.Helper()
	for conv, live := range want {
		snap := waitVersion(t, c, conv, last[conv], timeout)
		res, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := snapshotDiff(t, snap, res); d != "" {
			t.Errorf("%s: %s", conv, d)
		}
	}
}

// waitCaughtUp waits until the stored snapshot of conv covers the last
// event of conv in the events stream (which must be one that applies:
// versions are event sequences) and returns it.
func waitCaughtUp(t testing.TB, c *client.Client, conv string, timeout time.Duration) *streams.Snapshot {
	t.Helper()
	return waitVersion(t, c, conv, lastEventSeq(t, c, conv), timeout)
}

// lastEventSeq returns the stream sequence of the last event of conv (on an
// unpartitioned stream).
func lastEventSeq(t testing.TB, c *client.Client, conv string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, c.Subjects().Events(conv))
	if err != nil {
		t.Fatalf("last event of %s: %v", conv, err)
	}
	return m.Sequence
}

// waitVersion waits until the stored snapshot of conv reaches version (the
// sequence of the last event that changed it) and returns it.
func waitVersion(t testing.TB, c *client.Client, conv string, version uint64, timeout time.Duration) *streams.Snapshot {
	t.Helper()
	var snap *streams.Snapshot
	deadline := time.Now().Add(timeout)
	for {
		s, err := c.Snapshot(context.Background(), conv)
		if err == nil && s.Version >= version {
			snap = s
			break
		}
		if err != nil && !errors.Is(err, streams.ErrUnknownConversation) {
			t.Fatalf("snapshot %s: %v", conv, err)
		}
		if time.Now().After(deadline) {
			got := uint64(0)
			if s != nil {
				got = s.Version
			}
			t.Fatalf("snapshot %s: version %d after %v, want %d", conv, got, timeout, version)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return snap
}

// corpusCase is a conversation of the conformance corpus.
type corpusCase struct {
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`

	msgs   []*conversation.Message
	groups []*conversation.MessageGroup
}

// loadCorpus returns up to n conversations of a conformance file that a
// live Conversation accepts message by message (no repeated ids, no
// cycles), so that appending them one event at a time is meaningful.
func loadCorpus(t testing.TB, file string, n int) []corpusCase {
	t.Helper()
	cases, err := testcorpus.Decode[corpusCase]("../../conversation/testdata/conformance/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	for _, c := range cases {
		if len(out) == n {
			break
		}
		if len(c.Expected) == 0 {
			continue
		}
		msgs, groups, err := conversation.DecodeInputBytes(c.Input)
		if err != nil || len(msgs) == 0 {
			continue
		}
		live := conversation.NewConversation()
		ok := true
		for _, m := range msgs {
			if live.Append(m) != nil {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		c.msgs, c.groups = msgs, groups
		out = append(out, c)
	}
	return out
}

// decoded returns v as encoding/json decodes it.
func decoded(t testing.TB, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// snapshotDiff compares a snapshot with a parse result: "" when equal.
func snapshotDiff(t testing.TB, snap *streams.Snapshot, res *conversation.Result) string {
	t.Helper()
	if d := jsondiff.Diff(decoded(t, res.FlatList), decoded(t, snap.FlatList)); d != "" {
		return "flatList " + d
	}
	if d := jsondiff.Diff(decoded(t, res.ContextTree), decoded(t, snap.ContextTree)); d != "" {
		return "contextTree " + d
	}
	return ""
}

// compiledSchemas compiles the contract once per test binary.
var compiledSchemas = sync.OnceValues(schemas.Compile)

// checkEvent validates a published CloudEvent, envelope and data, against
// the schemas.
func checkEvent(t testing.TB, ev *event.Event) {
	t.Helper()
	set, err := compiledSchemas()
	if err != nil {
		t.Fatal(err)
	}
	env, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := set.ValidateJSON(schemas.Envelope, env); err != nil {
		t.Errorf("%s envelope: %v\n%s", ev.Type(), err, env)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(env, &fields); err != nil {
		t.Fatal(err)
	}
	if _, b64 := fields["data_base64"]; b64 && ev.DataContentType() == streams.ContentTypeJSON {
		t.Errorf("%s: JSON data written as data_base64", ev.Type())
	}
	if err := set.ValidateJSON(ev.Type(), ev.Data()); err != nil {
		t.Errorf("%s data: %v\n%.2000s", ev.Type(), err, ev.Data())
	}
}

// checkData validates event data the tests send against the schema of its
// type: the contract's inputs must admit the conformance corpus.
func checkData(t testing.TB, typ string, v any) {
	t.Helper()
	set, err := compiledSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Validate(typ, decoded(t, v)); err != nil {
		t.Errorf("%s data: %v", typ, err)
	}
}

// recorder collects the CloudEvents published on a subject.
type recorder struct {
	mu     sync.Mutex
	events []recorded
}

type recorded struct {
	subject string
	ev      *event.Event
	err     error
}

func record(t testing.TB, nc *nats.Conn, subject string) *recorder {
	t.Helper()
	r := &recorder{}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		r.mu.Lock()
		r.events = append(r.events, recorded{subject: m.Subject, ev: ev, err: err})
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	// A recorder holds whatever arrives: on a loaded machine the default
	// limits (65,536 messages, 64 MiB) dropped deltas of a corpus-sized
	// run (a slow consumer) that TestEmittedMatchesSchemas then waited
	// for in vain.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return r
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.events...)
}

func (r *recorder) count(subject string) int {
	n := 0
	for _, e := range r.all() {
		if subject == "" || e.subject == subject {
			n++
		}
	}
	return n
}

func caseID(i int) string {
	return fmt.Sprintf("c%03d", i)
}

// extString returns the extension attribute name of ev as a string ("" when
// absent).
func extString(ev *event.Event, name string) string {
	s, _ := types.ToString(ev.Extensions()[name])
	return s
}
