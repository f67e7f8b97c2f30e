package enginecore

import (
	"log/slog"
	"slices"
	"sync"
)

// Engine runs an ordered list of processors. Its methods are safe for
// concurrent use; changing the processor list while a run is in progress
// does not affect that run.
type Engine struct {
	mu         sync.RWMutex
	processors []Processor

	observer Observer
	logger   *slog.Logger
	limits   Limits // as set; unset fields are the defaults
}

// Option configures an Engine.
type Option func(*Engine)

// WithProcessors appends processors to the pipeline.
func WithProcessors(ps ...Processor) Option {
	return func(e *Engine) { e.processors = append(e.processors, ps...) }
}

// WithObserver sets the observer told about every processor run.
func WithObserver(o Observer) Option {
	return func(e *Engine) { e.observer = o }
}

// WithLogger sets the logger for debug traces and recovered panics. The
// default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(e *Engine) {
		if l != nil {
			e.logger = l
		}
	}
}

// New returns an Engine configured by opts.
func New(opts ...Option) *Engine {
	e := &Engine{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(e)
	}
	return e
}

// AddProcessor appends p to the pipeline and returns e for chaining.
func (e *Engine) AddProcessor(p Processor) *Engine {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.processors = append(slices.Clip(e.processors), p)
	return e
}

// RemoveProcessor removes every processor named name and returns e for
// chaining. Removing an unknown name does nothing.
func (e *Engine) RemoveProcessor(name string) *Engine {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.processors = slices.DeleteFunc(slices.Clone(e.processors), func(p Processor) bool {
		return p != nil && p.Name() == name
	})
	return e
}

// Clear removes all processors and returns e for chaining.
func (e *Engine) Clear() *Engine {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.processors = nil
	return e
}

// Processors returns a copy of the processor list.
func (e *Engine) Processors() []Processor {
	return slices.Clone(e.snapshot())
}

// Clone returns an independent engine with the same processors, observer,
// logger and limits. Processors themselves are shared.
func (e *Engine) Clone() *Engine {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return &Engine{
		processors: slices.Clone(e.processors),
		observer:   e.observer,
		logger:     e.logger,
		limits:     e.limits,
	}
}

// Limits returns the limits every run of e enforces.
func (e *Engine) Limits() Limits {
	return e.limits.withDefaults()
}

// snapshot returns the current list. The slice is never written in place
// (every change builds a new one), so it can be used without the lock.
func (e *Engine) snapshot() []Processor {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.processors
}
