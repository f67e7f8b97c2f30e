package worker

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/convstream/convstream/streams"
)

// recoverer returns the middleware that turns a panic in the stages into a
// rejection (code internal), logged with its stack on log, so that one bad
// event cannot stop the worker or be redelivered forever. The conversation
// may have been half changed, so it is marked dirty and dropped from
// memory by the rejection middleware, which must wrap this one.
func recoverer(log *slog.Logger) middleware {
	return func(next handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivery) (err error) {
			defer func() {
				if r := recover(); r != nil {
					log.ErrorContext(ctx, "event handler panicked", "subject", d.subject, "seq", d.seq,
						"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					d.dirty = d.state != nil
					err = streams.Reject(streams.CodeInternal, "internal error: %v", r)
				}
			}()
			return next(ctx, d)
		}
	}
}
