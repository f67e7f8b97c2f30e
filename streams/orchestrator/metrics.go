package orchestrator

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// Metric names.
const (
	MetricTimeToFirstToken = "convstream.orchestrator.time_to_first_token"
	MetricTokensPerSecond  = "convstream.orchestrator.tokens_per_second"
	MetricProviderErrors   = "convstream.orchestrator.provider_errors"
	MetricRepliesInFlight  = "convstream.orchestrator.replies_in_flight"
	MetricReplies          = "convstream.orchestrator.replies"
)

// instruments are the orchestrator's metrics.
type instruments struct {
	ttft, tokensPerSecond metric.Float64Histogram
	providerErrors        metric.Int64Counter
	inFlight              metric.Int64UpDownCounter
	replies               metric.Int64Counter
}

func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	m := mp.Meter(InstrumentationName)
	var ins instruments
	var err error
	if ins.ttft, err = m.Float64Histogram(MetricTimeToFirstToken, metric.WithUnit("s"),
		metric.WithDescription("time from a reply request's taking to the model's first delta"),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30)); err != nil {
		return nil, err
	}
	if ins.tokensPerSecond, err = m.Float64Histogram(MetricTokensPerSecond, metric.WithUnit("{token}/s"),
		metric.WithDescription("output tokens a second of a reply, from its first delta to its end"),
		metric.WithExplicitBucketBoundaries(5, 10, 20, 40, 80, 160, 320, 640)); err != nil {
		return nil, err
	}
	if ins.providerErrors, err = m.Int64Counter(MetricProviderErrors,
		metric.WithDescription("failed model calls by error type and the provider's code")); err != nil {
		return nil, err
	}
	if ins.inFlight, err = m.Int64UpDownCounter(MetricRepliesInFlight, metric.WithDescription("replies being written")); err != nil {
		return nil, err
	}
	if ins.replies, err = m.Int64Counter(MetricReplies, metric.WithDescription("replies ended, by status")); err != nil {
		return nil, err
	}
	// Every status and the replies in flight are there from the start, at
	// zero, so that a rate() alert has data before the first reply
	// (cmd/orchestrator's TestMetricsEndpoint).
	ctx := context.Background()
	for _, status := range []string{streams.StreamDone, streams.StreamStopped, streams.StreamInterrupted, streams.StreamError} {
		ins.replies.Add(ctx, 0, metric.WithAttributes(attribute.String("convstream.stream_status", status)))
	}
	ins.inFlight.Add(ctx, 0)
	return &ins, nil
}

func (ins *instruments) providerError(ctx context.Context, model, typ, code string) {
	ins.providerErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("gen_ai.request.model", model),
		attribute.String("error.type", typ), attribute.String("convstream.error_code", code)))
}
