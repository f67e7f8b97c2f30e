package models

import (
	"context"

	"github.com/convstream/convstream/providers"
)

// A Model streams one reply to a context.
type Model interface {
	// Name names the model as Open takes it: "builtin",
	// "openai:gpt-4.1-mini".
	Name() string
	// Format is the format the model wants its context in, what an
	// inference request asks the worker for.
	Format() providers.Format
	// Stream calls the model with req and passes each piece of the reply
	// to emit, in order, as it arrives; an error from emit ends the call
	// with that error. It returns how the reply ended, or an error: a
	// *Error for what the provider answered, or ctx's error when ctx ended
	// first (the deltas emitted so far are the reply written until then).
	Stream(ctx context.Context, req Request, emit func(Delta) error) (*Result, error)
}

// Request is what a model is called with.
type Request struct {
	// Body is the provider's request body in Format, without model or
	// credentials: an inference context's request.
	Body map[string]any
	// Messages are the same context as OpenAI Chat Completions messages
	// (an inference context's messages), which Builtin reads.
	Messages []map[string]any
	// Tools are the functions the model may call; they replace any the
	// body declares.
	Tools []Tool
	// MaxTokens bounds the reply, when positive.
	MaxTokens int
}

// Tool is a function a model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments; nil means an object
	// of any shape.
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Delta is a piece of a reply: new characters of its text or reasoning,
// or of its tool calls.
type Delta struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCallDelta
}

// empty reports whether d adds nothing.
func (d Delta) empty() bool { return d.Text == "" && d.Reasoning == "" && len(d.ToolCalls) == 0 }

// ToolCallDelta is a piece of the tool call at Index: its id and name
// when it starts, then fragments of its arguments (JSON text) to append.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Result is how a reply ended.
type Result struct {
	// FinishReason is why the model stopped, in OpenAI's words: stop,
	// length, tool_calls, content_filter.
	FinishReason string
	// Model is the model that answered, as the provider names it.
	Model string
	// Provider names the provider: builtin, openai, anthropic, gemini.
	Provider string
	Usage    *Usage
	// ReasoningSignature is the signature of the reasoning (Anthropic's
	// thinking), which a later request must send back with it.
	ReasoningSignature string
	// ThoughtSignatures are the signatures of tool calls by index
	// (Gemini's thoughtSignature), which a later request must send back.
	ThoughtSignatures map[int]string
	// ProviderFields are what else the provider returned that a later
	// request must carry back, under the names docs/events.md ("Provider
	// fields") gives them in reasoning.providerFields: thinking
	// (Anthropic's thinking and redacted_thinking blocks, in order),
	// thoughtSignature (Gemini's, of the reply's first part that is not a
	// call). Nil when there is none.
	ProviderFields map[string]any
}

// Usage counts the tokens of a call.
type Usage struct {
	InputTokens     int64 `json:"inputTokens"`
	OutputTokens    int64 `json:"outputTokens"`
	TotalTokens     int64 `json:"totalTokens"`
	ReasoningTokens int64 `json:"reasoningTokens,omitempty"`
	CachedTokens    int64 `json:"cachedTokens,omitempty"`
}
