package worker

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// DefaultPipeline is the pipeline spec run when a request names none.
const DefaultPipeline = "default"

// Pipelines builds the engine of a named pipeline spec. params are the
// request's per-processor configuration overrides (nil when none); opts
// must be passed on to the engine (they carry the worker's observer).
// An unknown name should be reported by wrapping ErrUnknownPipeline; any
// error is returned to the requester as a rejection.
type Pipelines interface {
	Pipeline(ctx context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error)
}

// PipelinesFunc adapts a function to Pipelines.
type PipelinesFunc func(ctx context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error)

// Pipeline calls f.
func (f PipelinesFunc) Pipeline(ctx context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
	return f(ctx, name, params, opts...)
}
