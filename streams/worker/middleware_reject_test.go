package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestRejections sends each kind of bad input and requires exactly one
// convstream.event.rejected.v1 for it, on the conversation's errors subject
// (errors.@ when the subject names no valid conversation), with nothing
// else published, the stored snapshot untouched and the event removed from
// the stream; the worker then goes on applying valid events.
func TestRejections(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	all := natstest.Record(t, nc, "convstream.>")
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	r := worker.StartWorker(t, nc, worker.WithMeterProvider(mp),
		worker.WithLimits(worker.Limits{MaxEventBytes: 4096, MaxMessages: 4}))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	const conv = "rej"
	send := func(typ string, data any, opts ...client.SendOption) {
		t.Helper()
		if _, err := c.Send(ctx, conv, typ, data, opts...); err != nil {
			t.Fatal(err)
		}
	}
	send(streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"})
	send(streams.TypeMessageAppended, map[string]any{"id": "m2", "role": "assistant", "content": "hello", "parentId": "m1"})
	before := natstest.WaitCaughtUp(t, c, conv, 10*time.Second)
	kv, err := js.KeyValue(ctx, "CONVSTREAM_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	revision := entry.Revision()

	rawN := 0
	raw := func(subject string, h nats.Header, body string) func() string {
		return func() string {
			rawN++
			m := nats.NewMsg(subject)
			for k, v := range h {
				m.Header[k] = v
			}
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("raw-%d", rawN))
			m.Data = []byte(body)
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
			return m.Header.Get(jetstream.MsgIDHeader)
		}
	}
	event := func(typ, extConv string, data any, mode streams.Mode, mutate func(*nats.Msg)) func() string {
		return func() string {
			ev, err := streams.NewEvent("ev-"+typ+"-"+extConv+time.Now().Format("150405.000000000"), typ, "urn:test", extConv, data)
			if err != nil {
				t.Fatal(err)
			}
			m, err := streams.EncodeEvent("convstream.events."+conv, ev, mode)
			if err != nil {
				t.Fatal(err)
			}
			if mutate != nil {
				mutate(m)
			}
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
			return ev.ID()
		}
	}
	ceJSON := nats.Header{"content-type": {streams.ContentTypeCloudEvents}}
	big := strings.Repeat("x", 8000)
	cases := []struct {
		name    string
		publish func() string
		code    streams.RejectCode
		errSubj string
	}{
		{"bad JSON", raw("convstream.events."+conv, ceJSON, `{"specversion":"1.0",`), streams.CodeNotCloudEvent, conv},
		{"not a CloudEvent", raw("convstream.events."+conv, nil, `{"id":"m9","role":"user"}`), streams.CodeNotCloudEvent, conv},
		{"CloudEvent without source", raw("convstream.events."+conv, ceJSON, `{"specversion":"1.0","id":"x","type":"convstream.message.appended.v1","data":{"id":"m9"}}`), streams.CodeNotCloudEvent, conv},
		{"unknown type", event("convstream.message.frobbed.v1", conv, map[string]any{"id": "m9"}, streams.Structured, nil), streams.CodeUnknownType, conv},
		{"inference type on the events stream", event(streams.TypeInferenceRequested, conv, map[string]any{"conversationId": conv}, streams.Binary, nil), streams.CodeUnknownType, conv},
		{"missing id", event(streams.TypeMessageAppended, conv, map[string]any{"role": "user"}, streams.Structured, nil), streams.CodeMissingID, conv},
		{"numeric id", event(streams.TypeMessageDeleted, conv, map[string]any{"id": 7}, streams.Binary, nil), streams.CodeMissingID, conv},
		{"data not an object", event(streams.TypeMessageAppended, conv, []any{1, 2}, streams.Structured, nil), streams.CodeBadData, conv},
		{"conversation id mismatch", event(streams.TypeMessageAppended, "other", map[string]any{"id": "m9"}, streams.Structured, nil), streams.CodeBadConversation, conv},
		{"conversation id missing", event(streams.TypeMessageAppended, "", map[string]any{"id": "m9"}, streams.Binary, nil), streams.CodeBadConversation, conv},
		{"over the size limit", event(streams.TypeMessageAppended, conv, map[string]any{"id": "m9", "content": big}, streams.Structured, nil), streams.CodeTooLarge, conv},
		{"unsupported content type", event(streams.TypeMessageAppended, conv, map[string]any{"id": "m9"}, streams.Binary,
			func(m *nats.Msg) { m.Header.Set("content-type", "text/plain") }), streams.CodeContentType, conv},
		{"bad msgpack", event(streams.TypeMessageAppended, conv, map[string]any{"id": "m9"}, streams.Binary,
			func(m *nats.Msg) { m.Header.Set("content-type", streams.ContentTypeMsgpack); m.Data = []byte{0xc1} }), streams.CodeBadData, conv},
		{"parent cycle", event(streams.TypeMessageUpdated, conv, map[string]any{"id": "m1", "parentId": "m2"}, streams.Structured, nil), streams.CodeCycle, conv},
		{"message that is its own parent", event(streams.TypeMessageAppended, conv, map[string]any{"id": "m9", "parentId": "m9"}, streams.Binary, nil), streams.CodeCycle, conv},
		{"append of an existing id", event(streams.TypeMessageAppended, conv, map[string]any{"id": "m1", "role": "user", "content": "other"}, streams.Structured, nil), streams.CodeExists, conv},
		{"update of a missing message", event(streams.TypeMessageUpdated, conv, map[string]any{"id": "nope", "content": "x"}, streams.Structured, nil), streams.CodeNotFound, conv},
		{"delete of a missing message", event(streams.TypeMessageDeleted, conv, map[string]any{"id": "nope"}, streams.Binary, nil), streams.CodeNotFound, conv},
		{"update changing the id", event(streams.TypeMessageUpdated, conv, map[string]any{"id": "m1", "metadata": "not an object", "parentId": 5}, streams.Structured, nil), "", conv},
		{"subject with two tokens", func() string {
			raw("convstream.events.a.b", ceJSON, `{"specversion":"1.0","id":"x2","source":"s","type":"convstream.message.appended.v1","data":{"id":"m9"}}`)()
			return "x2" // the CloudEvent's id, which it has
		}, streams.CodeBadSubject, streams.UnknownConversation},
	}
	// The update that sets metadata to a string and parentId to a number is
	// accepted by the conversation (fields are free-form); drop it rather
	// than guess.
	cases = append(cases[:len(cases)-2], cases[len(cases)-1])

	snapshotsBefore := all.Count("convstream.snapshots." + conv)
	seen := 0
	for _, tc := range cases {
		id := tc.publish()
		seen++
		natstest.WaitFor(t, 10*time.Second, tc.name+" rejected", func() bool {
			n := 0
			for _, e := range all.All() {
				if strings.HasPrefix(e.Subject, "convstream.errors.") {
					n++
				}
			}
			return n >= seen
		})
		var got []natstest.Recorded
		for _, e := range all.All() {
			if strings.HasPrefix(e.Subject, "convstream.errors.") {
				got = append(got, e)
			}
		}
		last := got[len(got)-1]
		if last.Subject != "convstream.errors."+tc.errSubj {
			t.Errorf("%s: rejection on %s", tc.name, last.Subject)
		}
		natstest.CheckEvent(t, last.Event)
		var rej streams.EventRejected
		if err := json.Unmarshal(last.Event.Data(), &rej); err != nil {
			t.Fatal(err)
		}
		if rej.Code != tc.code || rej.Reason == "" {
			t.Errorf("%s: code %q (%s), want %q", tc.name, rej.Code, rej.Reason, tc.code)
		}
		if rej.EventID == nil || *rej.EventID != id {
			t.Errorf("%s: eventId %v, want %q", tc.name, rej.EventID, id)
		}
		t.Logf("%-40s → %s: %s", tc.name, rej.Code, rej.Reason)
	}
	if n := all.Count("convstream.snapshots." + conv); n != snapshotsBefore {
		t.Errorf("%d snapshots published for bad input", n-snapshotsBefore)
	}
	entry, err = kv.Get(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if entry.Revision() != revision {
		t.Errorf("snapshot revision %d, want %d", entry.Revision(), revision)
	}
	stream, err := js.Stream(ctx, "CONVSTREAM_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("convstream.events.>"))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects["convstream.events."+conv]; n != 2 || info.State.Msgs != 2 {
		t.Errorf("stream holds %d events of %s, %d in all; want the 2 applied", n, conv, info.State.Msgs)
	}

	// The worker goes on, and the conversation kept its state.
	send(streams.TypeMessageAppended, map[string]any{"id": "m3", "role": "user", "content": "again", "parentId": "m2"})
	after := natstest.WaitCaughtUp(t, c, conv, 10*time.Second)
	if after.Version <= before.Version {
		t.Errorf("version %d after %d", after.Version, before.Version)
	}
	var flat []map[string]any
	if err := json.Unmarshal(after.FlatList, &flat); err != nil {
		t.Fatal(err)
	}
	if len(flat) != 3 || flat[0]["content"] != "hi" || flat[2]["id"] != "m3" {
		t.Errorf("flat list after rejections: %s", after.FlatList)
	}

	// Over the per-conversation message limit (4).
	send(streams.TypeMessageAppended, map[string]any{"id": "m4", "role": "assistant", "parentId": "m3"})
	natstest.WaitCaughtUp(t, c, conv, 10*time.Second)
	send(streams.TypeMessageAppended, map[string]any{"id": "m5", "role": "user", "parentId": "m4"})
	natstest.WaitFor(t, 10*time.Second, "too many messages rejected", func() bool {
		for _, e := range all.All() {
			if e.Subject == "convstream.errors."+conv && strings.Contains(string(e.Event.Data()), string(streams.CodeTooManyMessages)) {
				return true
			}
		}
		return false
	})

	r.Stop(t)
	rm := natstest.Collect(t, reader)
	counts := natstest.SumsOf(rm)
	if counts[worker.MetricEventsApplied] != 4 || counts[worker.MetricEventsRejected] != int64(len(cases)+1) {
		t.Errorf("metrics: %v", counts)
	}
	// The type attribute is an event type or "unknown": the rejected
	// event's type is the sender's string, and would otherwise make a
	// series of its own.
	types := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == worker.MetricEventsRejected {
				for _, dp := range s.DataPoints {
					v, _ := dp.Attributes.Value("type")
					types[v.AsString()] = true
				}
			}
		}
	}
	if !types["unknown"] || types["convstream.message.frobbed.v1"] {
		t.Errorf("rejections by type: %v", types)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == worker.MetricSnapshotLatency {
				if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 4 || h.DataPoints[0].Sum <= 0 {
					t.Errorf("snapshot latency: %+v", h.DataPoints)
				} else {
					t.Logf("snapshot latency: %d snapshots, mean %.2f ms", h.DataPoints[0].Count, 1000*h.DataPoints[0].Sum/float64(h.DataPoints[0].Count))
				}
			}
		}
	}
}
