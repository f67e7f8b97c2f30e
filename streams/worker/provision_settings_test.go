package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// runUnready runs a worker on nc until the test ends without waiting for
// it to be ready.
func runUnready(t testing.TB, nc *nats.Conn, opts ...Option) *Running {
	t.Helper()
	w, err := New(nc, append([]Option{WithLogger(natstest.TestLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &Running{W: w, Served: natstest.Serve(t, w.Run, func() error { return nil })}
}

// waitRefused waits until r's worker is not ready for settings that
// differ, and requires its reason to name every one of names.
func waitRefused(t testing.TB, r *Running, names ...string) {
	t.Helper()
	natstest.WaitFor(t, 60*time.Second, "a refusal for settings that differ", func() bool {
		return errors.Is(r.W.Ready(), ErrSettingsDiffer)
	})
	err := r.W.Ready()
	if !errors.Is(err, streams.ErrNotReady) {
		t.Errorf("Ready: %v, want it to wrap ErrNotReady", err)
	}
	for _, name := range names {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Ready: %v, want it to name %q", err, name)
		}
	}
}

// TestSettingsDifferRefused: a fleet of workers with mixed settings
// rewrote the stream's and the consumer's in turn, whichever started last
// winning (ack wait 1 m ↔ 3 s, max deliver, the duplicate window). A worker
// whose settings differ from those it finds changes nothing: it stays not
// ready naming them while the first goes on; one started with
// Storage.Reconcile changes them, and then the refused one, whose
// settings now agree, becomes ready by itself.
func TestSettingsDifferRefused(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	ctx := context.Background()
	first := []Option{WithStorage(Storage{DuplicateWindow: time.Minute}), WithAckWait(3 * time.Second), WithMaxDeliver(100)}
	StartWorker(t, natstest.Connect(t, ns), first...)
	c := natstest.NewClient(t, nc)
	send := func(conv, id string) {
		t.Helper()
		if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": id, "role": "user", "content": "hi"}); err != nil {
			t.Fatal(err)
		}
		natstest.WaitCaughtUp(t, c, conv, 30*time.Second)
	}
	send("before", "m1")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, dup, ackWait time.Duration, maxDeliver int) {
		t.Helper()
		st, err := js.Stream(ctx, c.Subjects().EventsStream())
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cons, err := st.Consumer(ctx, "convstream-worker")
		if err != nil {
			t.Fatal(err)
		}
		cinfo, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Duplicates != dup || cinfo.Config.AckWait != ackWait || cinfo.Config.MaxDeliver != maxDeliver {
			t.Errorf("%s: duplicate window %v, ack wait %v, max deliver %d; want %v, %v, %d", when,
				info.Config.Duplicates, cinfo.Config.AckWait, cinfo.Config.MaxDeliver, dup, ackWait, maxDeliver)
		}
	}

	// Another duplicate window: refused at the stream, before its consumer.
	other := []Option{WithStorage(Storage{DuplicateWindow: 2 * time.Minute}), WithAckWait(time.Minute), WithMaxDeliver(50)}
	waitRefused(t, runUnready(t, natstest.Connect(t, ns), other...), "events stream", "duplicate window 1m0s (this worker: 2m0s)")
	// The same stream settings, another consumer's.
	second := []Option{WithStorage(Storage{DuplicateWindow: time.Minute}), WithAckWait(time.Minute), WithMaxDeliver(50)}
	refused := runUnready(t, natstest.Connect(t, ns), second...)
	waitRefused(t, refused, "consumer convstream-worker", "ack wait 3s (this worker: 1m0s)", "max deliver 100 (this worker: 50)")
	check("two workers refused", time.Minute, 3*time.Second, 100)
	send("meanwhile", "m1") // the first worker goes on

	reconciling := append([]Option{WithStorage(Storage{DuplicateWindow: time.Minute, Reconcile: true})}, second[1:]...)
	StartWorker(t, natstest.Connect(t, ns), reconciling...)
	check("a worker reconciled", time.Minute, time.Minute, 50)
	natstest.WaitFor(t, 60*time.Second, "the refused worker ready once the settings agree", func() bool { return refused.W.Ready() == nil })
	send("after", "m1")
}

// TestConsumerSettings: an existing consumer's ack wait, max deliver and
// pinned TTL are kept, and named, unless reconciled; its MaxAckPending,
// which follows each worker's lanes, is never lowered.
func TestConsumerSettings(t *testing.T) {
	have := jetstream.ConsumerConfig{Durable: "c-p0", AckWait: 3 * time.Second, MaxDeliver: 100, PinnedTTL: 3 * time.Second, MaxAckPending: 9000}
	want := have
	want.MaxAckPending = 5000
	got, err := consumerSettings(have, want, false)
	if err != nil || got.MaxAckPending != 9000 {
		t.Errorf("same settings, fewer lanes: MaxAckPending %d, err %v; want 9000, nil", got.MaxAckPending, err)
	}
	want.MaxAckPending = 12000
	if got, _ := consumerSettings(have, want, false); got.MaxAckPending != 12000 {
		t.Errorf("more lanes: MaxAckPending %d, want 12000", got.MaxAckPending)
	}
	want.PinnedTTL = 10 * time.Second
	_, err = consumerSettings(have, want, false)
	if !errors.Is(err, ErrSettingsDiffer) || !strings.Contains(err.Error(), "pinned TTL 3s (this worker: 10s)") {
		t.Errorf("another pinned TTL: %v, want ErrSettingsDiffer naming it", err)
	}
	if got, err := consumerSettings(have, want, true); err != nil || got.PinnedTTL != 10*time.Second {
		t.Errorf("reconciled: pinned TTL %v, err %v; want 10s, nil", got.PinnedTTL, err)
	}
}
