package enginecore

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// Process runs the pipeline over messages, starting from empty metadata and
// an initial state of {"messages": messages}. The caller's slice and
// messages are not modified.
//
// A processor failure is returned as a *PipelineError. Cancellation of ctx
// is checked before each processor; it stops the run with an error wrapping
// ctx.Err(). Processors that loop over messages or expand text check ctx
// too, so a deadline also stops a long processor (its PipelineError wraps
// ctx.Err()). The run is bounded by the engine's limits (WithLimits): a
// processor that would exceed one fails with a *LimitError.
func (e *Engine) Process(ctx context.Context, messages []Message) (*PipelineResult, error) {
	return e.ProcessContext(ctx, &PipelineContext{
		Messages:     messages,
		InitialState: map[string]any{"messages": messages},
	})
}

// ProcessContext runs the pipeline starting from pc, which carries the
// input messages together with metadata, initial state and abort flag.
// pc itself is not modified. A nil InitialState becomes
// {"messages": pc.Messages}. The run gets a fresh Budget of the engine's
// limits, whatever pc.Budget holds.
func (e *Engine) ProcessContext(ctx context.Context, pc *PipelineContext) (*PipelineResult, error) {
	start := time.Now()
	procs := e.snapshot()

	if pc == nil {
		pc = &PipelineContext{}
	}
	cur := pc.Clone()
	cur.Budget = NewBudget(e.limits)
	if cur.InitialState == nil {
		cur.InitialState = map[string]any{"messages": pc.Messages}
	}

	stats := Stats{ProcessorDurations: make([]ProcessorDuration, 0, len(procs))}
	for i, p := range procs {
		if cur.IsAborted {
			e.logger.DebugContext(ctx, "pipeline aborted", slog.String("reason", cur.AbortReason))
			break
		}
		name := processorName(p, i)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("enginecore: pipeline stopped before processor %s: %w", name, err)
		}

		next, elapsed, err := e.runOne(ctx, p, name, cur)
		stats.ProcessorDurations = append(stats.ProcessorDurations, ProcessorDuration{Name: name, Duration: elapsed})
		if err != nil {
			return nil, &PipelineError{Processor: name, Cause: err}
		}
		stats.ProcessedCount++
		cur = next
	}
	stats.TotalDuration = time.Since(start)
	if cur.Messages == nil {
		cur.Messages = []Message{}
	}

	return &PipelineResult{
		Messages:    cur.Messages,
		Metadata:    cur.Metadata,
		IsAborted:   cur.IsAborted,
		AbortReason: cur.AbortReason,
		Stats:       stats,
	}, nil
}

// runOne runs a single processor, turning a panic or a nil result into an
// error and reporting to the observer.
func (e *Engine) runOne(ctx context.Context, p Processor, name string, pc *PipelineContext) (next *PipelineContext, elapsed time.Duration, err error) {
	if e.observer != nil {
		ctx = e.observer.ProcessorStarted(ctx, name)
	}
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = panicError(r)
			next = nil
			e.logger.ErrorContext(ctx, "processor panicked",
				slog.String("processor", name), slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
		}
		elapsed = time.Since(start)
		if e.observer != nil {
			e.observer.ProcessorFinished(ctx, name, elapsed, err)
		}
		e.logger.DebugContext(ctx, "processor finished",
			slog.String("processor", name), slog.Duration("elapsed", elapsed), slog.Any("err", err))
	}()

	if p == nil {
		return nil, 0, ErrNilProcessor
	}
	next, err = p.Process(ctx, pc)
	if err == nil && next == nil {
		err = ErrNilContext
	}
	return next, 0, err
}

func processorName(p Processor, i int) string {
	if p == nil {
		return fmt.Sprintf("#%d", i)
	}
	return p.Name()
}
