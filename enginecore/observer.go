package enginecore

import (
	"context"
	"time"
)

// Observer is told when each processor starts and finishes. It is the hook
// for tracing and metrics: an implementation can start a span in
// ProcessorStarted, return a context carrying it (the processor runs with
// that context) and end the span in ProcessorFinished.
//
// Observer methods are called from the goroutine running the pipeline and
// must be safe for concurrent use when the engine is.
type Observer interface {
	// ProcessorStarted is called before the processor runs. The returned
	// context is passed to the processor and to ProcessorFinished.
	ProcessorStarted(ctx context.Context, name string) context.Context
	// ProcessorFinished is called after the processor returned or panicked,
	// with the time it took and the error that fails the pipeline, if any.
	ProcessorFinished(ctx context.Context, name string, elapsed time.Duration, err error)
}
