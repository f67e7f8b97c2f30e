package worker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/internal/natstest"
)

// TestLostDeliveriesHealed runs the worker behind a proxy that loses a
// fifth of the events JetStream delivers to it the first time, as a
// client buffer that overflows, a network or a server might: events of a
// conversation after a lost one reach the worker first, and the lost one
// comes back after AckWait. Every conversation must equal Parse of its
// events (appends, then an update and a delete each, interleaved across
// conversations), with no event refused: the worker notices the break in
// its consumer's delivery sequence and reads what it missed from the
// stream before it applies a conversation's next event.
func TestLostDeliveriesHealed(t *testing.T) {
	for _, partitions := range []int{0, 2} {
		t.Run("partitions="+strconv.Itoa(partitions), func(t *testing.T) {
			lostDeliveriesHealed(t, partitions)
		})
	}
}

func lostDeliveriesHealed(t *testing.T, partitions int) {
	n := 12
	if testing.Short() {
		n = 6
	}
	events, want := natstest.Plan(t, natstest.LoadCorpus(t, "generated-normal.jsonl.gz", n))
	ns := natstest.StartServer(t, "")
	proxy := startLossyProxy(t, ns.Addr().(*net.TCPAddr).String(), func(ack string) bool {
		tok := ackTokens(ack)
		if tok == nil || tok[0] != "CONVSTREAM_EVENTS" || tok[2] != "1" {
			return false
		}
		seq, _ := strconv.ParseUint(tok[3], 10, 64)
		return seq%5 == 2
	})
	ncW, err := nats.Connect(proxy.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncW.Close)
	nc := natstest.Connect(t, ns)
	errs := natstest.Record(t, nc, "convstream.errors.>")
	reader := sdkmetric.NewManualReader()
	StartWorker(t, ncW, WithStorage(Storage{Partitions: partitions}), WithPinnedTTL(2*time.Second),
		WithAckWait(time.Second), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	last := map[string]uint64{}
	for _, e := range events {
		sent, err := c.Send(context.Background(), e.Conv, e.Type, e.Data)
		if err != nil {
			t.Fatal(err)
		}
		last[e.Conv] = sent.Sequence
	}
	natstest.CheckStoredAt(t, c, want, last, 30*time.Second)
	if n := errs.Count(""); n != 0 {
		t.Errorf("%d events refused; the first: %v", n, errs.All()[0].Event)
	}
	s := natstest.Sums(t, reader)
	if proxy.dropped.Load() == 0 {
		t.Fatal("the proxy lost no delivery")
	}
	t.Logf("%d conversations, %d events; %d deliveries lost; applied %d, skipped %d, rebuilds %d, gaps %d, healed %d",
		len(want), len(events), proxy.dropped.Load(), s[MetricEventsApplied], s[MetricEventsSkipped],
		s[MetricRebuilds], s[MetricDeliveryGaps], s[MetricEventsHealed])
}

// TestSlowConsumerResyncs overflows a subscription on the worker's
// connection: the slow consumer error is counted, passed on to the
// connection's own error handler, and counted as a break of the
// worker's consumer.
func TestSlowConsumerResyncs(t *testing.T) {
	ns := natstest.StartServer(t, "")
	passed := make(chan error, 16)
	ncW, err := nats.Connect(ns.ClientURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case passed <- err:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncW.Close)
	reader := sdkmetric.NewManualReader()
	StartWorker(t, ncW, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if _, err := ncW.ChanSubscribe("slow.subject", make(chan *nats.Msg, 1)); err != nil {
		t.Fatal(err)
	}
	if err := ncW.Flush(); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, ns)
	for range 100 {
		if err := nc.Publish("slow.subject", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the slow consumer counted", func() bool {
		rm := natstest.Collect(t, reader)
		return sumWhere(rm, MetricNATSAsyncErrors, "kind", "slow_consumer") >= 1 &&
			sumWhere(rm, MetricDeliveryGaps, "cause", "async_error") >= 1
	})
	select {
	case err := <-passed:
		if !errors.Is(err, nats.ErrSlowConsumer) {
			t.Errorf("the connection's handler got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the connection's own handler was not called")
	}
}
