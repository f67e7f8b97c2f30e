// Package enginecore runs a context pipeline: an ordered list of processors
// that turn a conversation's messages into the messages a model receives.
//
// A [Processor] takes a [PipelineContext] and returns the next one. The
// [Engine] runs processors in order, stops early when one of them aborts,
// times each step and turns any failure (returned error or panic) into a
// [*PipelineError] naming the processor.
//
// Messages are generic JSON objects ([Message]). Processors treat the
// messages and the slice they receive as read-only: a processor that changes
// a message copies it first and builds a new slice, so the caller's input is
// never modified.
//
// Every run is bounded by the engine's [Limits] ([WithLimits]): the run's
// [Budget] (PipelineContext.Budget) is what processors that expand text
// draw on, and one that would exceed a limit fails with a [*LimitError].
// Processors look at their context as they loop, so a deadline stops a
// long processor, not only the next one.
//
// The package knows nothing of transport or telemetry; an [Observer] passed
// with [WithObserver] sees every processor start and finish, which is where
// tracing is attached from outside.
package enginecore
