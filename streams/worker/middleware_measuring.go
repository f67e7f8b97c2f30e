package worker

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// measuring returns the metrics middleware: on ins, one count per outcome
// (applied, of them reapplied, skipped, rejected by code, failed) by event type, and the
// handling time of every delivery by outcome (TestRejections reads the
// counts).
func measuring(ins *instruments) middleware {
	return func(next handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivery) error {
			start := time.Now()
			err := next(ctx, d)
			typ, attrs := ins.typeOption("")
			if d.event != nil {
				typ, attrs = ins.typeOption(d.event.Type())
			}
			switch d.outcome {
			case applied:
				ins.applied.Add(ctx, 1, attrs)
				// Work done again: after a takeover, the events the dead
				// or silent owner held (TestFailoverWithinSeconds).
				if d.delivered > 1 {
					ins.reapplied.Add(ctx, 1, attrs)
				}
			case skipped:
				ins.skipped.Add(ctx, 1, attrs)
			case rejected:
				code := streams.CodeInternal
				var re *streams.RejectError
				if errors.As(err, &re) {
					code = re.Code
				}
				ins.rejected.Add(ctx, 1, metric.WithAttributes(attribute.String("type", typ), attribute.String("code", string(code))))
			default:
				ins.failed.Add(ctx, 1, attrs)
			}
			ins.eventDuration.Record(ctx, time.Since(start).Seconds(), ins.byOutcome[d.outcome])
			return err
		}
	}
}
