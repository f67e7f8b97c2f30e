package enginecore

import "context"

// Processor is one step of the pipeline.
//
// Process returns the context for the next step. It must not modify pc, the
// messages in it or the slice that holds them; see [PipelineContext.Derive].
// Returning an error fails the whole pipeline with a [*PipelineError].
type Processor interface {
	Name() string
	Process(ctx context.Context, pc *PipelineContext) (*PipelineContext, error)
}

// ProcessFunc is the signature of [Processor.Process].
type ProcessFunc func(ctx context.Context, pc *PipelineContext) (*PipelineContext, error)

// NewFunc returns a Processor with the given name that calls fn.
func NewFunc(name string, fn ProcessFunc) Processor {
	return funcProcessor{name: name, fn: fn}
}

type funcProcessor struct {
	name string
	fn   ProcessFunc
}

func (f funcProcessor) Name() string { return f.name }

func (f funcProcessor) Process(ctx context.Context, pc *PipelineContext) (*PipelineContext, error) {
	return f.fn(ctx, pc)
}
