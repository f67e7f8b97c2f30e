package providers

import (
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
	// Warnings say what of the context the format could not carry, e.g. a
	// group message that reached it unflattened, whose tool calls became
	// user text.
	Warnings []string `json:"warnings,omitempty"`
}

// An Option changes how Build writes a request.
type Option func(*options)

type options struct {
	maxTokens int
	budget    *Budget
	cache     *CacheBreakpoints
	profile   Profile
	input     []enginecore.Message
}

// WithProfile writes the request for the model p describes (default: the
// zero Profile, a model Build does not know).
func WithProfile(p Profile) Option {
	return func(o *options) { o.profile = p }
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
	if err := o.profile.Check(); err != nil {
		return nil, err
	}
	if f == FormatRaw {
		return &Request{Format: f, Messages: msgs}, nil
	}
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, err
	}
	turns, warnings := normalize(msgs, newInputIndex(o.input))
	w := writer{rules: o.profile.rulesFor(f), o: o}
	var r *Request
	if o.budget == nil {
		r = w.write(turns)
	} else {
		if err := o.budget.Check(); err != nil {
			return nil, err
		}
		var err error
		if r, err = o.budget.fit(turns, w); err != nil {
			return nil, err
		}
	}
	r.Warnings = warnings
	return r, nil
}

// A writer writes turns in one format, by one profile's rules.
type writer struct {
	rules
	o options
}

// write writes turns as a request.
func (w writer) write(turns []turn) *Request {
	r := &Request{Format: w.format, Messages: chatMessages(turns)}
	switch w.format {
	case FormatOpenAIChat:
		r.Body = map[string]any{"messages": r.Messages}
	case FormatOpenAIResponses:
		r.Body = responsesBody(turns, w.rules)
	case FormatAnthropic:
		r.Body = anthropicBody(turns, w.rules, w.o.maxTokens)
		if w.o.cache != nil {
			markCache(r.Body, *w.o.cache)
		}
	case FormatGemini:
		r.Body = geminiBody(turns, w.rules)
	}
	return r
}
