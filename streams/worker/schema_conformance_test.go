package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/schemas"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// nineShape is one of the nine inputs issue 35 found accepted although they
// break schemas/defs.json or schemas/cloudevent.json, with the rejection
// each gets now (docs/events.md, "What the worker refuses to pass on").
type nineShape struct {
	name   string
	header nats.Header
	body   string
	code   streams.RejectCode
	path   string
}

// nineShapes returns the nine, aimed at conversation conv.
func nineShapes(conv string) []nineShape {
	st := func() nats.Header { return nats.Header{"content-type": {streams.ContentTypeCloudEvents}} }
	bin := func(k, v string) nats.Header {
		h := nats.Header{}
		for name, value := range natstest.BinaryHeaders(streams.TypeMessageAppended, conv, streams.ContentTypeJSON) {
			h.Set(name, value)
		}
		h.Set(k, v)
		return h
	}
	ce := func(typ, data string) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":"e-%s","source":"urn:shape","type":%q,"conversationid":%q,"data":%s}`, conv, typ, conv, data)
	}
	app := streams.TypeMessageAppended
	return []nineShape{
		{"specversion 0.3", st(), `{"specversion":"0.3","id":"e","source":"urn:shape","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`, streams.CodeNotCloudEvent, "specversion"},
		{"%ZZ in ce-id", bin("ce-id", "e%ZZ"), `{"id":"m9"}`, streams.CodeNotCloudEvent, "id"},
		{"invalid UTF-8 in ce-source", bin("ce-source", "urn:%FF%FEx"), `{"id":"m9"}`, streams.CodeNotCloudEvent, "source"},
		{`a lone \ud800`, st(), ce(app, `{"id":"m9","content":"a\ud800b"}`), streams.CodeBadData, "data.content"},
		{"duplicate keys", st(), ce(app, `{"id":"m9","role":"user","role":"system"}`), streams.CodeBadData, "data.role"},
		{"parentId: 7", st(), ce(app, `{"id":"m9","parentId":7}`), streams.CodeBadData, "data.parentId"},
		{"role: {}", st(), ce(app, `{"id":"m9","role":{}}`), streams.CodeBadData, "data.role"},
		{`metadata: "str"`, st(), ce(app, `{"id":"m9","metadata":"str"}`), streams.CodeBadData, "data.metadata"},
		{"group mode: 12", st(), ce(streams.TypeGroupsUpserted, `{"id":"g9","mode":12}`), streams.CodeBadData, "data.mode"},
	}
}

// TestNineShapes runs each of the nine through the worker's decode and
// validate stages: each is refused with its code and path. Before, every
// one of them was accepted.
func TestNineShapes(t *testing.T) {
	w := &Worker{}
	for _, s := range nineShapes("c1") {
		ev, err := streams.DecodeEvent(s.header, []byte(s.body))
		var re *streams.RejectError
		if err != nil {
			var ae *streams.AttributeError
			if !errors.As(err, &ae) {
				t.Errorf("%s: %v, want an attribute named", s.name, err)
				continue
			}
			re = streams.RejectAt(streams.CodeNotCloudEvent, ae.Attr, "%s", ae.Msg)
		} else {
			d := &delivery{event: ev, conversationID: "c1"}
			if err := w.validate(context.Background(), d); !errors.As(err, &re) {
				t.Errorf("%s: accepted (%v)", s.name, err)
				continue
			}
		}
		if re.Code != s.code || re.Path != s.path {
			t.Errorf("%s: %s at %q (%s), want %s at %q", s.name, re.Code, re.Path, re.Reason, s.code, s.path)
		}
		t.Logf("%-28s → %s: %s", s.name, re.Code, re.Reason)
	}
}

// sendCorpusAsync publishes conversations as sendConversation does (modes
// and encodings varying by index) without waiting for each event's
// acknowledgement before the next: some 37,000 events one round trip at a
// time took over 5 minutes on a loaded 2-core machine. It returns how many
// it published.
func sendCorpusAsync(t *testing.T, js jetstream.JetStream, c *client.Client, cases []natstest.CorpusCase) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	send := func(conv string, i int, typ string, data any) {
		var opts []client.SendOption
		if i%2 == 1 {
			opts = append(opts, client.WithMode(streams.Binary))
		}
		if i%3 == 2 {
			opts = append(opts, client.WithContentType(streams.ContentTypeMsgpack))
		}
		msg, err := c.Message(ctx, c.Subjects().Events(conv), typ, conv, data, opts...)
		if err != nil {
			t.Fatal(err)
		}
		// A full window waits for the server (a loaded machine), then
		// the publish is tried again.
		for {
			_, err := js.PublishMsgAsync(msg, jetstream.WithStallWait(5*time.Second))
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				t.Fatal(err)
			}
		}
		n++
	}
	for i, cc := range cases {
		for _, g := range cc.Groups {
			send(natstest.CaseID(i), i, streams.TypeGroupsUpserted, g)
		}
		for _, m := range cc.Msgs {
			send(natstest.CaseID(i), i, streams.TypeMessageAppended, m)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(120 * time.Second):
		t.Fatalf("%d events still unacknowledged after 120 s", js.PublishAsyncPending())
	}
	return n
}

// TestEmittedMatchesSchemas sends every conformance conversation a live
// conversation accepts message by message (its groups, then its messages,
// in every mode and encoding) and the nine shapes to one worker, and
// validates with jsonschema everything the worker emits: each delta, each
// rejection, and each conversation's stored snapshot. Each of the nine is
// refused with its code and path, and leaves its conversation unchanged.
func TestEmittedMatchesSchemas(t *testing.T) {
	set, err := natstest.CompiledSchemas()
	if err != nil {
		t.Fatal(err)
	}
	var cases []natstest.CorpusCase
	for _, f := range []string{"generated-normal.jsonl.gz", "generated-noise.jsonl.gz", "reference-suite.jsonl.gz"} {
		n := 1 << 30
		if testing.Short() {
			n = 10
		}
		cases = append(cases, natstest.LoadCorpus(t, f, n)...)
	}
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	if err != nil {
		t.Fatal(err)
	}
	snaps := natstest.Record(t, nc, "convstream.snapshots.>")
	errs := natstest.Record(t, nc, "convstream.errors.>")
	StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	start := time.Now()
	events := sendCorpusAsync(t, js, c, cases)
	// Each shape goes to a conversation of its own holding one message.
	shapes := nineShapes("")
	seqs := make([]uint64, len(shapes))
	for i := range shapes {
		conv := fmt.Sprintf("shape-%d", i)
		if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}); err != nil {
			t.Fatal(err)
		}
		s := nineShapes(conv)[i]
		m := nats.NewMsg("convstream.events." + conv)
		m.Header = s.header
		m.Data = []byte(s.body)
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = ack.Sequence
		events += 2
	}
	validate := func(what, schema string, data []byte) {
		t.Helper()
		if err := set.ValidateJSON(schema, data); err != nil {
			t.Errorf("%s: %v\n%.1000s", what, err, data)
		}
	}
	for i := range cases {
		snap := natstest.WaitCaughtUp(t, c, natstest.CaseID(i), 120*time.Second)
		raw, err := json.Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		validate(natstest.CaseID(i)+" stored snapshot", streams.TypeSnapshotUpdated, raw)
	}
	for i, s := range shapes {
		conv := fmt.Sprintf("shape-%d", i)
		snap := natstest.WaitVersion(t, c, conv, 1, 20*time.Second)
		raw, err := json.Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		validate(conv+" stored snapshot", streams.TypeSnapshotUpdated, raw)
		var rej streams.EventRejected
		found := func() bool {
			for _, r := range errs.All() {
				if r.Subject == "convstream.errors."+conv && r.Err == nil && json.Unmarshal(r.Event.Data(), &rej) == nil && rej.Sequence == seqs[i] {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(20 * time.Second); !found() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if rej.Code != s.code || rej.Path != s.path {
			t.Errorf("%s: %s at %q (%s), want %s at %q", s.name, rej.Code, rej.Path, rej.Reason, s.code, s.path)
		}
		var flat []map[string]any
		if err := json.Unmarshal(snap.FlatList, &flat); err != nil || len(flat) != 1 || flat[0]["id"] != "m1" {
			t.Errorf("%s: flat list %s", s.name, snap.FlatList)
		}
	}
	natstest.WaitFor(t, 60*time.Second, "every delta published", func() bool { return snaps.Count("") >= events-len(shapes) })
	for _, r := range append(snaps.All(), errs.All()...) {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Subject, r.Err)
		}
		env, err := r.Event.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		validate(r.Subject+" envelope", schemas.Envelope, env)
		validate(r.Subject+" "+r.Event.Type(), r.Event.Type(), r.Event.Data())
	}
	if n := errs.Count(""); n != len(shapes) {
		t.Errorf("%d rejections, want %d (the nine shapes)", n, len(shapes))
	}
	t.Logf("%d conformance conversations and %d shapes, %d events: %d deltas, %d rejections and %d stored snapshots valid, in %v",
		len(cases), len(shapes), events, snaps.Count(""), errs.Count(""), len(cases)+len(shapes), time.Since(start).Round(time.Millisecond))
}
