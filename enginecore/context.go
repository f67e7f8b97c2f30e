package enginecore

import "maps"

// Message is one chat message as a generic JSON object. Values are those
// produced by encoding/json: nil, bool, float64, string, []any and
// map[string]any. A message is shared between pipeline steps and must be
// treated as immutable: copy it (maps.Clone) before changing a field.
type Message = map[string]any

// PipelineContext is the state that flows through the pipeline.
type PipelineContext struct {
	// Messages is the message list being built. Processors never write into
	// its backing array; they build a new slice when the list changes.
	Messages []Message
	// Metadata carries values between processors and out to the caller.
	Metadata map[string]any
	// InitialState is the state the pipeline started from, for example
	// {"messages": <input messages>}. Processors only read it.
	InitialState map[string]any
	// IsAborted stops the pipeline after the processor that set it.
	IsAborted bool
	// AbortReason says why the pipeline was aborted.
	AbortReason string
	// Budget is what the run may still spend of its limits; the engine
	// sets a fresh one for every run and processors that expand text draw
	// on it. Nil means the default limits (see Budget).
	Budget *Budget
}

// Clone returns a copy of pc with its own Messages slice and Metadata map.
// The messages themselves and InitialState are shared, not copied.
func (pc *PipelineContext) Clone() *PipelineContext {
	next := pc.Derive()
	next.Messages = append([]Message(nil), pc.Messages...)
	return next
}

// Derive returns a copy of pc with its own Metadata map; the Messages slice
// is shared. It is the cheap way for a processor to produce its result: set
// metadata on the copy and, if the message list changes, assign a new slice.
func (pc *PipelineContext) Derive() *PipelineContext {
	next := *pc
	next.Metadata = maps.Clone(pc.Metadata)
	if next.Metadata == nil {
		next.Metadata = make(map[string]any, 4)
	}
	return &next
}

// Abort returns a copy of pc marked as aborted with the given reason.
func (pc *PipelineContext) Abort(reason string) *PipelineContext {
	next := *pc
	next.IsAborted = true
	next.AbortReason = reason
	return &next
}
