package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/streams"
	"go.opentelemetry.io/otel/trace"
)

// TestDeltaEnvelope holds the hand-written delta event to the SDK's: both
// are read back with DecodeEvent and must give the same event and headers,
// with and without trace context, for sources the SDK normalizes.
func TestDeltaEnvelope(t *testing.T) {
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
		SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
		TraceFlags: trace.FlagsSampled,
		TraceState: mustTraceState(t, "vendor=a1,other=b:2"),
	}))
	data := `{"conversationId":"c-1","version":7,"baseVersion":3,"flatList":[{"id":"m\u00e9\"1","content":"<b>&\n"}]}`
	sources := []string{"urn:convstream:worker", "https://example.com/a b?x=1&y=é#frag", "/relative/path", "worker-1", "mailto:ops@example.com", `urn:a"b\c`, "urn:日本"}
	now := time.Date(2026, 11, 30, 11, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, ctx := range []context.Context{context.Background(), traced} {
		for _, src := range sources {
			name := fmt.Sprintf("%s/traced=%v", src, ctx != context.Background())
			t.Run(name, func(t *testing.T) {
				source, err := eventSource(src)
				if err != nil {
					t.Fatal(err)
				}
				id := deltaID("c-1", 7)
				got := deltaMsg(ctx, &deltaScratch{}, "convstream.snapshots.c-1", source, id, "c-1", now, len(data),
					func(b []byte) []byte { return append(b, data...) })
				var scratch deltaScratch
				for range 2 { // as a lane does, twice over the same scratch
					again := deltaMsg(ctx, &scratch, "convstream.snapshots.c-1", source, id, "c-1", now, len(data),
						func(b []byte) []byte { return append(b, data...) })
					if !reflect.DeepEqual(again.Header, got.Header) || !bytes.Equal(again.Data, got.Data) || again.Subject != got.Subject {
						t.Fatalf("reused scratch: %v %s %s, fresh: %v %s %s", again.Header, again.Subject, again.Data, got.Header, got.Subject, got.Data)
					}
				}
				if !json.Valid(got.Data) {
					t.Fatalf("not JSON: %s", got.Data)
				}
				ev, err := streams.NewEvent(id, streams.TypeSnapshotDelta, src, "c-1", json.RawMessage(data))
				if err != nil {
					t.Fatal(err)
				}
				ev.SetTime(now)
				streams.InjectTraceContext(ctx, ev)
				want, err := streams.EncodeEvent("convstream.snapshots.c-1", ev, streams.Structured)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Header, want.Header) || got.Subject != want.Subject {
					t.Errorf("headers %v %s, the SDK's %v %s", got.Header, got.Subject, want.Header, want.Subject)
				}
				g, err := streams.DecodeEvent(got.Header, got.Data)
				if err != nil {
					t.Fatalf("%v: %s", err, got.Data)
				}
				w, err := streams.DecodeEvent(want.Header, want.Data)
				if err != nil {
					t.Fatal(err)
				}
				if g.String() != w.String() || string(g.Data()) != string(w.Data()) || !reflect.DeepEqual(g.Extensions(), w.Extensions()) || !g.Time().Equal(w.Time()) {
					t.Errorf("got\n%s\nthe SDK's\n%s\n(%s\nagainst\n%s)", g, w, got.Data, want.Data)
				}
			})
		}
	}
}

func mustTraceState(t *testing.T, s string) trace.TraceState {
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestWorkerSourceChecked: a source the SDK cannot parse is refused when
// the worker is configured, not on every delta.
func TestWorkerSourceChecked(t *testing.T) {
	for _, source := range []string{"%zz", "urn:tab\there"} {
		c := defaultConfig()
		WithSource(source)(&c)
		if err := c.validate(); !errors.Is(err, streams.ErrInvalidConfig) || !strings.Contains(err.Error(), "source") {
			t.Errorf("validate with source %q = %v, want ErrInvalidConfig naming the source", source, err)
		}
	}
}
