package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// hostileKind is one kind of hostile input of TestHostileSuite: a message
// published on the events stream, and the rejection it must get: its
// code and, where one thing is at fault, its path.
type hostileKind struct {
	name    string
	subject string // default convstream.events.<suiteConv>
	header  map[string]string
	body    []byte
	code    streams.RejectCode
	path    string // "" when the rejection names no path
}

// suiteConv is the conversation the hostile kinds are aimed at. It holds
// m1 ← m2 ← m3 before they start, so that updates, deletes and cycles
// have something to work on.
const suiteConv = "target"

// rejectionLog collects the rejections the worker publishes, by the stream
// sequence of the event refused. It reads the errors subject over core
// NATS, for speed; storedRejections checks at the end that the errors
// stream kept every one.
type rejectionLog struct {
	mu    sync.Mutex
	bySeq map[uint64]streams.EventRejected
}

func newRejectionLog(t *testing.T, nc *nats.Conn) *rejectionLog {
	t.Helper()
	l := &rejectionLog{bySeq: map[uint64]streams.EventRejected{}}
	sub, err := nc.Subscribe("convstream.errors.>", func(m *nats.Msg) {
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		if err != nil {
			t.Errorf("undecodable rejection: %v", err)
			return
		}
		natstest.CheckEvent(t, ev) // every rejection matches its schema
		var rej streams.EventRejected
		if err := json.Unmarshal(ev.Data(), &rej); err != nil {
			t.Error(err)
			return
		}
		l.mu.Lock()
		l.bySeq[rej.Sequence] = rej
		l.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

// awaitRejection waits for the rejection of the event stored at seq.
func (l *rejectionLog) awaitRejection(t *testing.T, seq uint64, timeout time.Duration) (streams.EventRejected, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l.mu.Lock()
		rej, ok := l.bySeq[seq]
		l.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return rej, ok
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// storedRejections reads the errors stream to its end and returns its
// rejections by the events-stream sequence they refuse.
func storedRejections(ctx context.Context, t *testing.T, js jetstream.JetStream) map[uint64]streams.EventRejected {
	t.Helper()
	cons, err := js.OrderedConsumer(ctx, "CONVSTREAM_ERRORS", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]streams.EventRejected{}
	for left := info.NumPending; left > 0; {
		batch, err := cons.Fetch(int(min(left, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			ev, err := streams.DecodeEvent(nats.Header(m.Headers()), m.Data())
			if err != nil || ev.Type() != streams.TypeEventRejected {
				continue
			}
			var rej streams.EventRejected
			if json.Unmarshal(ev.Data(), &rej) == nil {
				out[rej.Sequence] = rej
			}
		}
		if n == 0 {
			t.Fatalf("errors stream: nothing fetched with %d records left", left)
		}
		left -= uint64(n)
	}
	return out
}

// msgpackFloat returns msgpack {"id":"m9","score":<float64 bits>}.
func msgpackFloat(bits uint64) []byte {
	b := []byte("\x82\xa2id\xa2m9\xa5score\xcb")
	for i := 7; i >= 0; i-- {
		b = append(b, byte(bits>>(8*i)))
	}
	return b
}

// hostileKinds returns the suite's kinds, grouped by what they attack.
func hostileKinds() []hostileKind {
	conv := suiteConv
	st := func() map[string]string { return map[string]string{"content-type": streams.ContentTypeCloudEvents} }
	bin := func(typ, ct string) map[string]string { return natstest.BinaryHeaders(typ, conv, ct) }
	app, upd, del, grp := streams.TypeMessageAppended, streams.TypeMessageUpdated, streams.TypeMessageDeleted, streams.TypeGroupsUpserted
	envelope := func(attrs string) []byte {
		return []byte(`{"specversion":"1.0","id":"e1","source":"urn:hostile","type":"` + app + `","conversationid":"` + conv + `"` + attrs + `}`)
	}
	var ks []hostileKind
	add := func(k ...hostileKind) { ks = append(ks, k...) }

	// Not CloudEvents: neither mode, or not the JSON event format.
	add(
		hostileKind{name: "no headers, empty body", code: streams.CodeNotCloudEvent},
		hostileKind{name: "no headers, JSON body", body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, empty body", header: st(), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, null", header: st(), body: []byte("null"), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, array", header: st(), body: []byte(`[{"specversion":"1.0"}]`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, a string", header: st(), body: []byte(`"event"`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, truncated", header: st(), body: []byte(`{"specversion":"1.0","id":"x`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, NUL bytes", header: st(), body: []byte("{\x00\x00}"), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, invalid UTF-8 outside strings", header: st(), body: []byte("\xff\xfe{}"), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, trailing garbage", header: st(), body: append(ceJSON(app, conv, `{"id":"m9"}`), "}}x"...), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, two events", header: st(), body: append(ceJSON(app, conv, `{"id":"m9"}`), ceJSON(app, conv, `{"id":"m8"}`)...), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured, bad data_base64", header: st(), body: envelope(`,"datacontenttype":"application/msgpack","data_base64":"!!!"`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "batch format", header: map[string]string{"content-type": "application/cloudevents-batch+json"}, body: []byte("[" + string(ceJSON(app, conv, `{"id":"m9"}`)) + "]"), code: streams.CodeNotCloudEvent},
		hostileKind{name: "structured content type, binary body", header: with(bin(app, ""), "content-type", streams.ContentTypeCloudEvents), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent},
	)

	// The envelope: specversion, required attributes, their types.
	add(
		hostileKind{name: "specversion 0.3 (structured)", header: st(), body: []byte(`{"specversion":"0.3","id":"x","source":"urn:s","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent, path: "specversion"},
		hostileKind{name: "specversion 0.3 (binary)", header: with(bin(app, ""), "ce-specversion", "0.3"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "specversion"},
		hostileKind{name: "specversion 2.0", header: st(), body: []byte(`{"specversion":"2.0","id":"x","source":"s","type":"` + app + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "specversion a number", header: st(), body: []byte(`{"specversion":1.0,"id":"x","source":"s","type":"` + app + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "specversion missing", header: st(), body: []byte(`{"id":"x","source":"s","type":"` + app + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "id a number", header: st(), body: []byte(`{"specversion":"1.0","id":7,"source":"s","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "id null", header: st(), body: []byte(`{"specversion":"1.0","id":null,"source":"s","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "source missing", header: st(), body: []byte(`{"specversion":"1.0","id":"x","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "type an object", header: st(), body: []byte(`{"specversion":"1.0","id":"x","source":"s","type":{},"conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "time not a time", header: st(), body: envelope(`,"time":"yesterday","data":{"id":"m9"}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "id given twice", header: st(), body: []byte(`{"specversion":"1.0","id":"x","id":"y","source":"s","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent, path: "id"},
		hostileKind{name: "id given twice, once escaped", header: st(), body: []byte(`{"specversion":"1.0","id":"x","\u0069d":"y","source":"s","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent, path: "id"},
		hostileKind{name: "type given twice", header: st(), body: envelope(`,"type":"` + upd + `","data":{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "type"},
		hostileKind{name: "data given twice", header: st(), body: envelope(`,"data":{"id":"m9"},"data":{"id":"m8"}`), code: streams.CodeNotCloudEvent, path: "data"},
		hostileKind{name: "conversationid given twice", header: st(), body: envelope(`,"conversationid":"other","data":{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "conversationid"},
		hostileKind{name: "control characters in the id (structured)", header: st(), body: []byte(`{"specversion":"1.0","id":"a\u0007b","source":"s","type":"` + app + `","conversationid":"` + conv + `","data":{"id":"m9"}}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "invalid UTF-8 in the source (structured)", header: st(), body: []byte("{\"specversion\":\"1.0\",\"id\":\"x\",\"source\":\"urn:\xff\",\"type\":\"" + app + "\",\"conversationid\":\"" + conv + "\",\"data\":{\"id\":\"m9\"}}"), code: streams.CodeNotCloudEvent},
		hostileKind{name: "invalid UTF-8 in the subject (structured)", header: st(), body: envelope(",\"subject\":\"s\xc3\",\"data\":{\"id\":\"m9\"}"), code: streams.CodeNotCloudEvent},
	)

	// Binary mode: ce-* headers.
	for _, attr := range []string{"id", "source", "type"} {
		add(hostileKind{name: "binary, no ce-" + attr, header: without(bin(app, ""), "ce-"+attr), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent})
	}
	add(
		hostileKind{name: "binary, empty ce-id", header: with(bin(app, ""), "ce-id", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "binary, ce-specversion 9.9", header: with(bin(app, ""), "ce-specversion", "9.9"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "binary, ce-time not a time", header: with(bin(app, ""), "ce-time", "yesterday"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "binary, control characters in ce-id", header: with(bin(app, ""), "ce-id", "evil%0Aid%00"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "binary, %ZZ in ce-id", header: with(bin(app, ""), "ce-id", "a%ZZ"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "id"},
		hostileKind{name: "binary, trailing % in ce-source", header: with(bin(app, ""), "ce-source", "urn:x%"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "source"},
		hostileKind{name: "binary, half an escape in ce-subject", header: with(bin(app, ""), "ce-subject", "s%4"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "subject"},
		hostileKind{name: "binary, %G0 in ce-conversationid", header: with(bin(app, ""), "ce-conversationid", conv+"%G0"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "conversationid"},
		hostileKind{name: "binary, malformed escape in an extension", header: with(bin(app, ""), "ce-tenant", "%%"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "tenant"},
		hostileKind{name: "binary, ce-specversion 1.0 percent-encoded as 1%2 0", header: with(bin(app, ""), "ce-specversion", "1%2"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: "specversion"},
	)
	for _, attr := range []string{"id", "source", "type", "subject", "dataschema", "conversationid", "tenant"} {
		path := attr
		if attr == "dataschema" {
			path = "" // the SDK refuses it as no URI first
		}
		add(hostileKind{name: "binary, invalid UTF-8 in ce-" + attr, header: with(bin(app, ""), "ce-"+attr, "urn:x%FF%FE"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent, path: path})
	}

	// Types, conversations, subjects.
	for _, typ := range []string{"convstream.message.appended.v2", streams.TypeSnapshotUpdated, streams.TypeSnapshotDelta, streams.TypeInferenceRequested, streams.TypeEventRejected, "com.example.other", "Convstream.Message.Appended.V1"} {
		add(hostileKind{name: "type " + typ, header: bin(typ, ""), body: []byte(`{"id":"m9"}`), code: streams.CodeUnknownType})
	}
	add(
		hostileKind{name: "conversationid missing", header: without(bin(app, ""), "ce-conversationid"), body: []byte(`{"id":"m9"}`), code: streams.CodeBadConversation},
		hostileKind{name: "conversationid differing in case", header: natstest.BinaryHeaders(app, "TARGET", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadConversation},
		hostileKind{name: "conversationid of another conversation", header: natstest.BinaryHeaders(app, "calm-0", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadConversation},
		hostileKind{name: "subject id with a dollar sign", subject: "convstream.events.a$b", header: natstest.BinaryHeaders(app, "a$b", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadSubject},
		hostileKind{name: "subject id of 129 characters", subject: "convstream.events." + strings.Repeat("a", 129), header: natstest.BinaryHeaders(app, strings.Repeat("a", 129), ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadSubject},
		hostileKind{name: "subject id of 4,000 characters", subject: "convstream.events." + strings.Repeat("b", 4000), header: natstest.BinaryHeaders(app, "b", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadSubject},
		hostileKind{name: "subject with an extra token", subject: "convstream.events.x.y", header: natstest.BinaryHeaders(app, "y", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadSubject},
		hostileKind{name: "subject id not ASCII", subject: "convstream.events.ünï", header: natstest.BinaryHeaders(app, "ünï", ""), body: []byte(`{"id":"m9"}`), code: streams.CodeBadSubject},
	)

	// Content types.
	for _, ct := range []string{"text/plain", "application/xml", "application/octet-stream", "image/png", "application/cbor", "multipart/mixed; boundary=x"} {
		add(hostileKind{name: "datacontenttype " + ct, header: bin(app, ct), body: []byte(`{"id":"m9"}`), code: streams.CodeContentType})
	}
	add(hostileKind{name: "datacontenttype with a broken parameter", header: bin(app, "application/json; charset"), body: []byte(`{"id":"m9"}`), code: streams.CodeNotCloudEvent})

	// Sizes.
	add(
		hostileKind{name: "payload one byte over the limit", header: bin(app, ""), body: []byte(`{"id":"m9","content":"` + strings.Repeat("x", worker.DefaultMaxEventBytes) + `"}`), code: streams.CodeTooLarge},
		hostileKind{name: "16 MB payload", header: st(), body: ceJSON(app, conv, `{"id":"m9","content":"`+strings.Repeat("x", 16<<20)+`"}`), code: streams.CodeTooLarge},
		hostileKind{name: "a message id of 2 MB", header: bin(app, ""), body: []byte(`{"id":"` + strings.Repeat("i", 2<<20) + `"}`), code: streams.CodeTooLarge},
		hostileKind{name: "60 KB of headers and a full payload", header: with(bin(app, ""), "ce-padding", strings.Repeat("p", 60<<10)), body: []byte(`{"id":"m9","content":"` + strings.Repeat("x", worker.DefaultMaxEventBytes-(60<<10)) + `"}`), code: streams.CodeTooLarge},
	)

	// Data that is not an object with a string id.
	for name, data := range map[string]string{"a string": `"m9"`, "a number": `12`, "an array": `[{"id":"m9"}]`, "null": `null`, "true": `true`} {
		add(hostileKind{name: "data " + name, header: bin(app, streams.ContentTypeJSON), body: []byte(data), code: streams.CodeBadData})
	}
	add(hostileKind{name: "data missing", header: bin(app, ""), code: streams.CodeBadData})
	for typ, short := range map[string]string{app: "append", upd: "update", del: "delete", grp: "group"} {
		for name, data := range map[string]string{"no id": `{"role":"user"}`, "id a number": `{"id":9}`, "id empty": `{"id":""}`} {
			add(hostileKind{name: short + ", " + name, header: st(), body: ceJSON(typ, conv, data), code: streams.CodeMissingID})
		}
	}
	add(
		hostileKind{name: "append, id null", header: st(), body: ceJSON(app, conv, `{"id":null}`), code: streams.CodeMissingID},
		hostileKind{name: "append, id an object", header: st(), body: ceJSON(app, conv, `{"id":{"id":"m9"}}`), code: streams.CodeMissingID},
		hostileKind{name: "append, id an array", header: st(), body: ceJSON(app, conv, `{"id":["m9"]}`), code: streams.CodeMissingID},
		hostileKind{name: "append, id true", header: st(), body: ceJSON(app, conv, `{"id":true}`), code: streams.CodeMissingID},
		hostileKind{name: "control characters in a message id", header: st(), body: ceJSON(app, conv, `{"id":"m\u0000\n9"}`), code: streams.CodeInvalidData},
		hostileKind{name: "control characters in a parent id", header: st(), body: ceJSON(app, conv, `{"id":"m9","parentId":"m1\u001b[2J"}`), code: streams.CodeInvalidData},
	)

	// Wrong types in the fields the schemas type.
	typed := []struct {
		typ, short, field string
		values            []string
	}{
		{app, "append", "role", []string{`{}`, `[]`, `7`, `true`, `null`}},
		{app, "append", "parentId", []string{`7`, `true`, `{}`, `["m1"]`}},
		{app, "append", "metadata", []string{`"str"`, `7`, `[]`, `false`}},
		{upd, "update", "role", []string{`{}`, `7`}},
		{upd, "update", "parentId", []string{`7`, `{"id":"m1"}`}},
		{upd, "update", "metadata", []string{`"str"`, `[1]`}},
		{grp, "group", "mode", []string{`12`, `null`, `{}`, `["compare"]`}},
		{grp, "group", "parentMessageId", []string{`7`, `{}`, `true`}},
	}
	for _, tf := range typed {
		id := "m9"
		if tf.typ == upd {
			id = "m2"
		} else if tf.typ == grp {
			id = "g9"
		}
		for _, v := range tf.values {
			add(hostileKind{name: fmt.Sprintf("%s, %s: %s", tf.short, tf.field, v), header: st(),
				body: ceJSON(tf.typ, conv, fmt.Sprintf(`{"id":%q,%q:%s}`, id, tf.field, v)), code: streams.CodeBadData, path: "data." + tf.field})
		}
	}
	add(
		hostileKind{name: "append, parentId 7 (binary JSON)", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","parentId":7}`), code: streams.CodeBadData, path: "data.parentId"},
		hostileKind{name: "append, parentId 7 (msgpack)", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa8parentId\x07"), code: streams.CodeBadData, path: "data.parentId"},
		hostileKind{name: "append, role {} (msgpack)", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa4role\x80"), code: streams.CodeBadData, path: "data.role"},
		hostileKind{name: "append, metadata \"str\" (spaced JSON)", header: bin(app, streams.ContentTypeJSON), body: []byte(`{ "id": "m9", "metadata": "str" }`), code: streams.CodeBadData, path: "data.metadata"},
	)

	// Text that is not Unicode: bad UTF-8 in every string field, lone
	// surrogates.
	for _, f := range []struct{ name, data, path string }{
		{"id", "{\"id\":\"m\xff9\"}", "data.id"},
		{"role", "{\"id\":\"m9\",\"role\":\"us\xc3er\"}", "data.role"},
		{"parentId", "{\"id\":\"m9\",\"parentId\":\"m\xe2\x82\"}", "data.parentId"},
		{"content", "{\"id\":\"m9\",\"content\":\"\xff\xfe\"}", "data.content"},
		{"metadata.note", "{\"id\":\"m9\",\"metadata\":{\"note\":\"\xc0\xaf\"}}", "data.metadata.note"},
		{"an array element", "{\"id\":\"m9\",\"tags\":[\"ok\",\"\xed\xa0\x80\"]}", "data.tags[1]"},
		{"a key", "{\"id\":\"m9\",\"k\xff\":1}", "data"},
		{"a nested key", "{\"id\":\"m9\",\"metadata\":{\"a\":1,\"k\xff\":1}}", "data.metadata"},
	} {
		add(hostileKind{name: "invalid UTF-8 in " + f.name + " (JSON)", header: bin(app, streams.ContentTypeJSON), body: []byte(f.data), code: streams.CodeBadData, path: f.path})
	}
	add(
		hostileKind{name: "invalid UTF-8 in an update's content", header: bin(upd, streams.ContentTypeJSON), body: []byte("{\"id\":\"m2\",\"content\":\"\xff\"}"), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: "invalid UTF-8 in a delete's id", header: bin(del, streams.ContentTypeJSON), body: []byte("{\"id\":\"m\xff\"}"), code: streams.CodeBadData, path: "data.id"},
		hostileKind{name: "invalid UTF-8 in a group's mode", header: bin(grp, streams.ContentTypeJSON), body: []byte("{\"id\":\"g9\",\"mode\":\"\xff\"}"), code: streams.CodeBadData, path: "data.mode"},
		hostileKind{name: "invalid UTF-8 in a msgpack string", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa7content\xa2\xff\xfe"), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: "invalid UTF-8 in a msgpack key", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa2\xff\xfe\x01"), code: streams.CodeBadData, path: "data"},
		hostileKind{name: "UTF-8 of a surrogate in msgpack", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa7content\xa3\xed\xa0\x80"), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: `lone high surrogate \ud800`, header: st(), body: ceJSON(app, conv, `{"id":"m9","content":"a\ud800b"}`), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: `lone low surrogate \udc00`, header: st(), body: ceJSON(app, conv, `{"id":"m9","content":"\udc00"}`), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: `high surrogate before a non-surrogate escape`, header: st(), body: ceJSON(app, conv, `{"id":"m9","content":"\ud83d\u0041"}`), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: `surrogates reversed`, header: st(), body: ceJSON(app, conv, `{"id":"m9","content":"\ude00\ud83d"}`), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: `lone surrogate in a nested key`, header: st(), body: ceJSON(app, conv, `{"id":"m9","metadata":{"\ud800":1}}`), code: streams.CodeBadData, path: "data.metadata"},
		hostileKind{name: `lone surrogate at the end of the text`, header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","content":"\ud800"}`), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: `lone surrogate in an update`, header: st(), body: ceJSON(upd, conv, `{"id":"m2","content":"\udfff"}`), code: streams.CodeBadData, path: "data.content"},
	)

	// Duplicate keys.
	add(
		hostileKind{name: "duplicate role", header: st(), body: ceJSON(app, conv, `{"id":"m9","role":"user","role":"system"}`), code: streams.CodeBadData, path: "data.role"},
		hostileKind{name: "duplicate id", header: st(), body: ceJSON(app, conv, `{"id":"m9","id":"m1"}`), code: streams.CodeBadData, path: "data.id"},
		hostileKind{name: "duplicate key, once escaped", header: st(), body: ceJSON(app, conv, `{"id":"m9","parentId":"m1","parent\u0049d":"m3"}`), code: streams.CodeBadData, path: "data.parentId"},
		hostileKind{name: "duplicate key in metadata", header: st(), body: ceJSON(app, conv, `{"id":"m9","metadata":{"a":1,"b":2,"a":3}}`), code: streams.CodeBadData, path: "data.metadata.a"},
		hostileKind{name: "duplicate key in an array's object", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","tools":[{"id":"t1"},{"id":"t2","id":"t3"}]}`), code: streams.CodeBadData, path: "data.tools[1].id"},
		hostileKind{name: "duplicate key among 40", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","metadata":{` + manyKeys(40) + `,"k7":0}}`), code: streams.CodeBadData, path: "data.metadata.k7"},
		hostileKind{name: "duplicate key in an update", header: st(), body: ceJSON(upd, conv, `{"id":"m2","content":"a","content":"b"}`), code: streams.CodeBadData, path: "data.content"},
		hostileKind{name: "duplicate key in a group", header: st(), body: ceJSON(grp, conv, `{"id":"g9","mode":"compare","mode":"summary"}`), code: streams.CodeBadData, path: "data.mode"},
		hostileKind{name: "duplicate key in msgpack", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x83\xa2id\xa2m9\xa4role\xa4user\xa4role\xa6system"), code: streams.CodeBadData, path: "data.role"},
		hostileKind{name: "duplicate key in nested msgpack", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa8metadata\x82\xa1a\x01\xa1a\x02"), code: streams.CodeBadData, path: "data.metadata.a"},
	)

	// Numbers JSON has no room for.
	add(
		hostileKind{name: "NaN literal", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":NaN}`), code: streams.CodeBadData},
		hostileKind{name: "Infinity literal", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":Infinity}`), code: streams.CodeBadData},
		hostileKind{name: "-Infinity literal", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":-Infinity}`), code: streams.CodeBadData},
		hostileKind{name: "number 1e400", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":1e400}`), code: streams.CodeBadData},
		hostileKind{name: "number -1e999999", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":-1e999999}`), code: streams.CodeBadData},
		hostileKind{name: "number of 400 digits", header: st(), body: ceJSON(app, conv, `{"id":"m9","score":1`+strings.Repeat("0", 400)+`}`), code: streams.CodeBadData},
		hostileKind{name: "hex number", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":0x10}`), code: streams.CodeBadData},
		hostileKind{name: "number with a leading plus", header: bin(app, streams.ContentTypeJSON), body: []byte(`{"id":"m9","score":+1}`), code: streams.CodeBadData},
		hostileKind{name: "msgpack float64 NaN", header: bin(app, streams.ContentTypeMsgpack), body: msgpackFloat(0x7ff8000000000001), code: streams.CodeBadData},
		hostileKind{name: "msgpack float64 +Inf", header: bin(app, streams.ContentTypeMsgpack), body: msgpackFloat(0x7ff0000000000000), code: streams.CodeBadData},
		hostileKind{name: "msgpack float64 -Inf", header: bin(app, streams.ContentTypeMsgpack), body: msgpackFloat(0xfff0000000000000), code: streams.CodeBadData},
		hostileKind{name: "msgpack float32 NaN", header: bin(app, streams.ContentTypeMsgpack), body: []byte("\x82\xa2id\xa2m9\xa5score\xca\x7f\xc0\x00\x00"), code: streams.CodeBadData},
	)

	// Nesting bombs.
	add(
		hostileKind{name: "metadata nested 100,000 deep (structured)", header: st(), body: ceJSON(app, conv, `{"id":"m9","metadata":`+nested(100_000)+`}`), code: streams.CodeNotCloudEvent},
		hostileKind{name: "metadata nested 100,000 deep (binary JSON)", header: bin(app, ""), body: []byte(`{"id":"m9","metadata":` + nested(100_000) + `}`), code: streams.CodeBadData},
		hostileKind{name: "metadata nested 129 deep", header: bin(app, ""), body: []byte(`{"id":"m9","metadata":` + nested(streams.MaxDataDepth) + `}`), code: streams.CodeBadData},
		hostileKind{name: "arrays nested 200,000 deep", header: bin(app, ""), body: []byte(`{"id":"m9","x":` + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + `}`), code: streams.CodeBadData},
		hostileKind{name: "unbalanced brackets, 500,000 open", header: bin(app, ""), body: []byte(`{"id":"m9","x":` + strings.Repeat("[", 500_000)), code: streams.CodeBadData},
		hostileKind{name: "msgpack maps nested 100,000 deep", header: bin(app, streams.ContentTypeMsgpack), body: msgpackNested(100_000), code: streams.CodeBadData},
		hostileKind{name: "msgpack arrays nested 100,000 deep", header: bin(app, streams.ContentTypeMsgpack), body: append([]byte("\x82\xa2id\xa2m9\xa1x"), bytes.Repeat([]byte{0x91}, 100_000)...), code: streams.CodeBadData},
	)

	// msgpack lengths and forms.
	mp := func(name string, body string) hostileKind {
		return hostileKind{name: "msgpack " + name, header: bin(app, streams.ContentTypeMsgpack), body: []byte(body), code: streams.CodeBadData}
	}
	add(
		mp("array claiming 4 billion elements", "\x82\xa2id\xa2m9\xa7content\xdd\xff\xff\xff\xff"),
		mp("map claiming 4 billion entries", "\x82\xa2id\xa2m9\xa7content\xdf\xff\xff\xff\xff"),
		mp("string claiming 4 GB", "\x82\xa2id\xa2m9\xa7content\xdb\xff\xff\xff\xff"),
		mp("binary claiming 4 GB", "\x82\xa2id\xa2m9\xa7content\xc6\xff\xff\xff\xff"),
		mp("ext claiming 4 GB", "\x82\xa2id\xa2m9\xa7content\xc9\xff\xff\xff\xff\x01"),
		mp("top map claiming a million entries", "\xdf\x00\x0f\x42\x40\xa2id\xa2m9"),
		mp("map16 claiming 65,535 entries", "\xde\xff\xff\xa2id\xa2m9"),
		mp("map with an integer key", "\x82\xa2id\xa2m9\x01\x02"),
		mp("map with a nil key", "\x82\xa2id\xa2m9\xc0\x02"),
		mp("map with an array key", "\x82\xa2id\xa2m9\x91\x01\x02"),
		mp("map with a binary key", "\x82\xa2id\xa2m9\xc4\x01k\x02"),
		mp("truncated in a key", "\x82\xa2id"),
		mp("truncated in a float", "\x82\xa2id\xa2m9\xa1f\xcb\x00\x00"),
		mp("trailing bytes", "\x81\xa2id\xa2m9\xc0\xc0"),
		mp("the unused byte 0xc1", "\x82\xa2id\xa2m9\xa1x\xc1"),
		mp("a top-level array", "\x91\x81\xa2id\xa2m9"),
		mp("a top-level string", "\xa2m9"),
		mp("empty", ""),
	)

	// Structure and semantics.
	add(
		hostileKind{name: "self-parent on append", header: st(), body: ceJSON(app, conv, `{"id":"m9","parentId":"m9"}`), code: streams.CodeCycle},
		hostileKind{name: "self-parent on update", header: st(), body: ceJSON(upd, conv, `{"id":"m2","parentId":"m2"}`), code: streams.CodeCycle},
		hostileKind{name: "two-message cycle", header: st(), body: ceJSON(upd, conv, `{"id":"m1","parentId":"m2"}`), code: streams.CodeCycle},
		hostileKind{name: "three-message cycle", header: st(), body: ceJSON(upd, conv, `{"id":"m1","parentId":"m3"}`), code: streams.CodeCycle},
		hostileKind{name: "duplicate id with other content", header: st(), body: ceJSON(app, conv, `{"id":"m2","role":"user","content":"not the same"}`), code: streams.CodeExists},
		hostileKind{name: "update of a missing message", header: st(), body: ceJSON(upd, conv, `{"id":"nope","content":"x"}`), code: streams.CodeNotFound},
		hostileKind{name: "delete of a missing message", header: st(), body: ceJSON(del, conv, `{"id":"nope"}`), code: streams.CodeNotFound},
	)
	return ks
}

// manyKeys returns n members "k0":0,... of an object.
func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}

// TestHostileSuite publishes every kind of hostileKinds, one after the
// other, to one embedded JetStream server and one worker, while eight
// other conversations get ordinary events between them. For each kind:
// the worker is still serving, and the event is rejected with the code
// (and the path, where one thing is at fault) the kind names, on the
// errors subject. At the end every other conversation equals
// conversation.Parse of its messages, the target conversation is as it
// was, and the heap the process (worker and server) holds is within a
// bound of where it started.
func TestHostileSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes over 100 MB")
	}
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(), MaxPayload: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	r := worker.StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	rejections := newRejectionLog(t, nc)
	ctx := context.Background()

	for i, parent := range []any{nil, "m1", "m2"} {
		data := map[string]any{"id": fmt.Sprintf("m%d", i+1), "role": "user", "content": "ok", "parentId": parent}
		if _, err := c.Send(ctx, suiteConv, streams.TypeMessageAppended, data); err != nil {
			t.Fatal(err)
		}
	}
	before := natstest.WaitCaughtUp(t, c, suiteConv, 20*time.Second)

	// Eight conversations that only get good events, a few at a time
	// between the hostile kinds.
	const calm = 8
	calmMsgs := make([][]*conversation.Message, calm)
	sendCalm := func() {
		for i := range calm {
			conv := fmt.Sprintf("calm-%d", i)
			k := len(calmMsgs[i])
			data := map[string]any{"id": fmt.Sprintf("c%d", k), "role": []string{"user", "assistant"}[k%2], "content": fmt.Sprintf("%s/%d", conv, k)}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("c%d", k-1)
			}
			var opts []client.SendOption
			if k%2 == 1 {
				opts = append(opts, client.WithMode(streams.Binary))
			}
			if k%3 == 2 {
				opts = append(opts, client.WithContentType(streams.ContentTypeMsgpack))
			}
			if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, data, opts...); err != nil {
				t.Fatal(err)
			}
			calmMsgs[i] = append(calmMsgs[i], conversation.MustMessage(data))
		}
	}

	kinds := hostileKinds()
	names := map[string]bool{}
	for _, k := range kinds {
		if names[k.name] {
			t.Fatalf("kind %q twice", k.name)
		}
		names[k.name] = true
	}

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapInuse
	var peak uint64
	withPath := 0
	rejectedAt := map[uint64]string{} // events-stream sequence → kind
	for i, k := range kinds {
		if i%10 == 0 {
			sendCalm()
		}
		subject := k.subject
		if subject == "" {
			subject = "convstream.events." + suiteConv
		}
		m := nats.NewMsg(subject)
		for h, v := range k.header {
			m.Header.Set(h, v)
		}
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("suite-%d", i))
		m.Data = k.body
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatalf("%s: publish: %v", k.name, err)
		}
		rej, ok := rejections.awaitRejection(t, ack.Sequence, 20*time.Second)
		rejectedAt[ack.Sequence] = k.name
		switch {
		case !ok:
			t.Errorf("%s: no rejection within 20 s", k.name)
		case rej.Code != k.code:
			t.Errorf("%s: code %q (%.200s), want %q", k.name, rej.Code, rej.Reason, k.code)
		case rej.Path != k.path && k.path != "":
			t.Errorf("%s: path %q (%.200s), want %q", k.name, rej.Path, rej.Reason, k.path)
		case len(rej.Reason) > 4096:
			t.Errorf("%s: reason of %d bytes", k.name, len(rej.Reason))
		}
		if k.path != "" {
			withPath++
		}
		if err := r.W.Ready(); err != nil {
			t.Fatalf("after %s: worker not ready: %v", k.name, err)
		}
		t.Logf("%3d %-55.55s %8d B → %s %s: %.100s", i+1, k.name, len(k.body), rej.Code, rej.Path, rej.Reason)
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	kinds = nil
	t.Logf("hostile kinds: %d (%d with a path)", len(names), withPath)

	// Durable: every rejection is kept in the errors stream, readable by a
	// client that was not listening.
	stored := storedRejections(ctx, t, js)
	for seq, name := range rejectedAt {
		if _, ok := stored[seq]; !ok {
			t.Errorf("%s: its rejection is not in the errors stream", name)
		}
	}
	t.Logf("errors stream: %d records, every kind's rejection among them", len(stored))
	if len(names) < 120 {
		t.Errorf("%d kinds, want at least 120", len(names))
	}

	// The worker goes on: the calm conversations equal Parse, the target
	// is as it was and takes an ordinary event.
	sendCalm()
	for i, msgs := range calmMsgs {
		conv := fmt.Sprintf("calm-%d", i)
		snap := natstest.WaitCaughtUp(t, c, conv, 30*time.Second)
		want, err := conversation.Parse(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := natstest.SnapshotDiff(t, snap, want); d != "" {
			t.Errorf("%s: %s", conv, d)
		}
	}
	after, err := c.Snapshot(ctx, suiteConv)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version || !bytes.Equal(after.FlatList, before.FlatList) {
		t.Errorf("%s changed: version %d → %d", suiteConv, before.Version, after.Version)
	}
	if _, err := c.Send(ctx, suiteConv, streams.TypeMessageAppended, map[string]any{"id": "m4", "parentId": "m3", "role": "user"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitCaughtUp(t, c, suiteConv, 20*time.Second)

	// Memory: the heap in use comes back within 48 MiB of where it
	// started (the server keeps the blocks it wrote last cached for a
	// while: see TestHostileInput), and never rose by more than 512 MiB
	// while 16 MB and 2 MB inputs went through.
	settle := time.Now()
	for {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse <= heapBefore+48<<20 || time.Since(settle) > 15*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("heap in use %.1f MiB before, %.1f MiB after (%v later), peak sampled %.1f MiB",
		mib(heapBefore), mib(ms.HeapInuse), time.Since(settle).Round(time.Millisecond), mib(peak))
	if ms.HeapInuse > heapBefore+48<<20 {
		t.Errorf("heap in use grew from %.1f to %.1f MiB", mib(heapBefore), mib(ms.HeapInuse))
	}
	if peak > heapBefore+512<<20 {
		t.Errorf("heap in use peaked at %.1f MiB (from %.1f)", mib(peak), mib(heapBefore))
	}
}
