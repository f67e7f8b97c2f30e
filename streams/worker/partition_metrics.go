package worker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// Metric names of partitions and their owners.
const (
	MetricPartitionsOwned   = "convstream.partitions.owned"
	MetricPartitionsChanges = "convstream.partitions.changes"
)

// partitionChange is what happened to a partition this worker pulls.
type partitionChange int

const (
	partitionAcquired  partitionChange = iota // the server pinned this worker: a new tenure
	partitionLost                             // the server pinned another worker: a takeover of this one's
	partitionHandedOff                        // given up, over the fair share, after storing its conversations
	partitionChanges                          // the number of changes
)

func (c partitionChange) String() string {
	return [...]string{"acquired", "lost", "handed_off"}[c]
}

// partitionMetrics counts the changes of the partitions this worker owns,
// by change; byChange holds the attribute option of each.
type partitionMetrics struct {
	changes  metric.Int64Counter
	byChange [partitionChanges]metric.MeasurementOption
}

// observePartitions reports how many partitions the worker owns
// (convstream.partitions.owned) and makes the counter of their changes
// (convstream.partitions.changes), every change at 0 from the start.
func (w *Worker) observePartitions(mp metric.MeterProvider) (*partitionMetrics, error) {
	m := mp.Meter(streams.InstrumentationName)
	_, err := m.Int64ObservableGauge(MetricPartitionsOwned, metric.WithUnit("{partition}"),
		metric.WithDescription("Partitions of the events stream this worker owns (pinned to it), against its fair share."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(len(w.OwnedPartitions())))
			return nil
		}))
	if err != nil {
		return nil, err
	}
	pm := &partitionMetrics{}
	pm.changes, err = m.Int64Counter(MetricPartitionsChanges, metric.WithUnit("{partition}"),
		metric.WithDescription("Partitions this worker acquired, lost to another worker (a takeover: its events applied again there), or handed off."))
	if err != nil {
		return nil, err
	}
	for c := range partitionChanges {
		pm.byChange[c] = metric.WithAttributeSet(attribute.NewSet(attribute.String("change", c.String())))
		pm.changes.Add(context.Background(), 0, pm.byChange[c])
	}
	return pm, nil
}

// changed counts a change of a partition.
func (pm *partitionMetrics) changed(ctx context.Context, c partitionChange) {
	pm.changes.Add(ctx, 1, pm.byChange[c])
}
