package providers

import (
	"fmt"

	"github.com/convstream/convstream/enginecore"
)

// Request is a pipeline's output in one format.
type Request struct {
	// Format is the format written.
	Format Format `json:"format"`
	// Messages are the normalised messages as OpenAI Chat Completions
	// messages, whatever the format (for FormatRaw: the pipeline's output
	// unchanged): a view of the context that every client can read.
	Messages []map[string]any `json:"messages"`
	// Body is the provider's request body without model, credentials or
	// generation settings other than those the API requires; nil for
	// FormatRaw.
	Body map[string]any `json:"request,omitempty"`
	// Usage is what the budget did; nil without WithBudget.
	Usage *Usage `json:"usage,omitempty"`
}

// An Option changes how Build writes a request.
type Option func(*options)

type options struct {
	maxTokens int
	budget    *Budget
	cache     *CacheBreakpoints
}

// WithBudget drops the oldest turns that do not fit in b (see Budget);
// not for FormatRaw.
func WithBudget(b Budget) Option {
	return func(o *options) { o.budget = &b }
}

// WithMaxTokens sets an Anthropic request's max_tokens (default
// DefaultMaxTokens).
func WithMaxTokens(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxTokens = n
		}
	}
}

// Build writes msgs, a pipeline's output, in format f. It does not modify
// msgs.
func Build(msgs []enginecore.Message, f Format, opts ...Option) (*Request, error) {
	o := options{maxTokens: DefaultMaxTokens}
	for _, opt := range opts {
		opt(&o)
	}
	if o.cache != nil {
		if err := o.cache.Check(); err != nil {
			return nil, err
		}
	}
	if f == FormatRaw {
		return &Request{Format: f, Messages: msgs}, nil
	}
	turns := normalize(msgs)
	var usage *Usage
	if o.budget != nil {
		if err := o.budget.Check(); err != nil {
			return nil, err
		}
		fitted, u, err := o.budget.fit(turns)
		if err != nil {
			return nil, err
		}
		turns, usage = fitted, &u
	}
	r := &Request{Format: f, Messages: chatMessages(turns), Usage: usage}
	switch f {
	case FormatOpenAIChat:
		r.Body = map[string]any{"messages": r.Messages}
	case FormatOpenAIResponses:
		r.Body = responsesBody(turns)
	case FormatAnthropic:
		r.Body = anthropicBody(turns, o)
		if o.cache != nil {
			markCache(r.Body, *o.cache)
		}
	case FormatGemini:
		r.Body = geminiBody(turns)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownFormat, f)
	}
	return r, nil
}
