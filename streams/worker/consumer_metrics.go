package worker

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// consumerInfoTimeout bounds the reads of consumer info a collection makes:
// a scrape that waits on a lost server answers late, without these gauges,
// rather than not at all.
const consumerInfoTimeout = 2 * time.Second

// observeConsumers reports, as gauges, the events each of the worker's
// consumers has yet to deliver (its lag: convstream.consumer.pending) and
// those delivered and not yet acknowledged (convstream.consumer.ack_pending),
// by consumer and, on a partitioned stream, partition. They are read from
// the server at each collection, once Run made the consumers. Every worker
// reports every partition's consumer: alert on the maximum across workers.
func (w *Worker) observeConsumers(mp metric.MeterProvider) error {
	m := mp.Meter(streams.InstrumentationName)
	pending, err := m.Int64ObservableGauge(MetricConsumerPending, metric.WithUnit("{event}"),
		metric.WithDescription("Events of the stream the consumer has not delivered yet: the worker's lag, by consumer and partition."))
	if err != nil {
		return err
	}
	ackPending, err := m.Int64ObservableGauge(MetricConsumerAckPending, metric.WithUnit("{event}"),
		metric.WithDescription("Events the consumer delivered that are not acknowledged yet, by consumer and partition."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		cons := w.consumers.Load()
		if cons == nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, consumerInfoTimeout)
		defer cancel()
		for p, c := range *cons {
			info, err := c.Info(ctx)
			if err != nil {
				continue // no figure rather than a stale one
			}
			attrs := []attribute.KeyValue{attribute.String("consumer", info.Name)}
			if w.partitions() > 0 {
				attrs = append(attrs, attribute.String("partition", strconv.Itoa(p)))
			}
			set := metric.WithAttributes(attrs...)
			o.ObserveInt64(pending, int64(info.NumPending), set)
			o.ObserveInt64(ackPending, int64(info.NumAckPending), set)
		}
		return nil
	}, pending, ackPending)
	return err
}

// setConsumers gives observeConsumers and the purges the consumers Run
// made, by partition (one when the stream is not partitioned).
func (w *Worker) setConsumers(cons []jetstream.Consumer) {
	w.consumers.Store(&cons)
}

// consumerList returns the consumers Run made, by partition, nil before.
func (w *Worker) consumerList() []jetstream.Consumer {
	if cons := w.consumers.Load(); cons != nil {
		return *cons
	}
	return nil
}

// observeConnection reports the worker's NATS connection: 1 while it is
// connected and 0 otherwise (convstream.nats.connected), and how many
// times it reconnected (convstream.nats.reconnects).
func (w *Worker) observeConnection(mp metric.MeterProvider) error {
	m := mp.Meter(streams.InstrumentationName)
	_, err := m.Int64ObservableGauge(MetricNATSConnected, metric.WithUnit("{connection}"),
		metric.WithDescription("1 while the worker is connected to a NATS server, 0 while it is not (disconnected, reconnecting, draining, closed)."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			v := int64(0)
			if w.nc.Status() == nats.CONNECTED {
				v = 1
			}
			o.Observe(v)
			return nil
		}))
	if err != nil {
		return err
	}
	_, err = m.Int64ObservableCounter(MetricNATSReconnects, metric.WithUnit("{reconnect}"),
		metric.WithDescription("Times the worker's NATS connection was reestablished, to the same server or another."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(w.nc.Stats().Reconnects))
			return nil
		}))
	return err
}
