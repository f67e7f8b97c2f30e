package worker

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestMiddlewareAlone builds the handler chain as New does, from the
// middleware constructors alone, each given only its dependencies (a real
// JetStream stream and errors stream, the OpenTelemetry SDK, a degraded
// set), with no Worker: a stage that panics and one refused at a limit are
// each reported and stored on the errors stream, removed from the events
// stream, counted and traced as rejected, and the limit marks its
// conversation degraded.
func TestMiddlewareAlone(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := defaultConfig()
	stream, _, err := Provision(ctx, js, cfg.subjects, cfg.storage, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := provisionErrors(ctx, js, errorsStreamConfig(cfg.subjects, cfg.storage, cfg.errorRetention), cfg.storage.Reconcile, nil); err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	ins, err := newInstruments(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tracer := trace.NewTracerProvider(trace.WithSpanProcessor(spans)).Tracer("test")
	log := natstest.TestLogger(t)
	rep := &reports{js: js, subjects: cfg.subjects, source: cfg.source, log: log}
	var degraded degradedSet

	stages := map[string]stage{
		"panic": func(context.Context, *delivery) error { panic("boom") },
		"limit": func(context.Context, *delivery) error {
			return streams.Reject(streams.CodeTooManyMessages, "too many messages")
		},
	}
	for _, conv := range []string{"panic", "limit"} {
		h := chain([]stage{stages[conv]},
			tracing(tracer, true),
			measuring(ins),
			rejection(rep.rejection, stream.DeleteMsg, &degraded, log),
			recoverer(log))
		subject := cfg.subjects.StoredEvents(conv, 0)
		ack, err := js.Publish(ctx, subject, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		d := &delivery{subject: subject, seq: ack.Sequence, conversationID: conv, eventID: "ev-" + conv}
		err = h(ctx, d)
		var re *streams.RejectError
		if !errors.Is(err, streams.ErrRejected) || !errors.As(err, &re) || d.outcome != rejected {
			t.Fatalf("%s: err %v, outcome %v; want a rejection, settled as rejected", conv, err, d.outcome)
		}
		want := streams.CodeInternal
		if conv == "limit" {
			want = streams.CodeTooManyMessages
		}
		if re.Code != want {
			t.Errorf("%s: code %s, want %s", conv, re.Code, want)
		}
		if _, err := stream.GetMsg(ctx, ack.Sequence); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("%s: the event is still in the events stream (%v)", conv, err)
		}
		errs, err := js.Stream(ctx, cfg.subjects.ErrorsStream())
		if err != nil {
			t.Fatal(err)
		}
		m, err := errs.GetLastMsgForSubject(ctx, cfg.subjects.Errors(conv))
		if err != nil {
			t.Fatalf("%s: no stored rejection: %v", conv, err)
		}
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		if err != nil || ev.Type() != streams.TypeEventRejected || ev.ID() != "rejected:"+strconv.FormatUint(ack.Sequence, 10) {
			t.Errorf("%s: stored %v (%v)", conv, ev, err)
		}
	}

	if got := degraded.list(); len(got) != 1 || got[0].ConversationID != "limit" || got[0].Code != streams.CodeTooManyMessages {
		t.Errorf("degraded: %+v, want the limit's conversation only", got)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	codes := map[streams.RejectCode]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == MetricEventsRejected {
				for _, dp := range s.DataPoints {
					v, _ := dp.Attributes.Value("code")
					codes[streams.RejectCode(v.AsString())] += dp.Value
				}
			}
		}
	}
	if codes[streams.CodeInternal] != 1 || codes[streams.CodeTooManyMessages] != 1 || len(codes) != 2 {
		t.Errorf("rejections counted by code: %v", codes)
	}
	ended := spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans, want one a delivery", len(ended))
	}
	for _, s := range ended {
		outcome := ""
		for _, a := range s.Attributes() {
			if a.Key == "convstream.outcome" {
				outcome = a.Value.AsString()
			}
		}
		if outcome != "rejected" {
			t.Errorf("span %s: outcome %q, want rejected", s.Name(), outcome)
		}
	}
}
