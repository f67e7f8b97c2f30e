package main

import (
	"flag"

	"github.com/convstream/convstream/streams"
)

// formatFlags are the flags that shape an inference context: its format
// and token budget (docs/events.md, "Formats").
type formatFlags struct {
	format                        string
	maxTokens, reserve, keepTurns int
	encoding                      string
}

func (f *formatFlags) register(fs *flag.FlagSet, defaultFormat, defaultUsage string) {
	fs.StringVar(&f.format, "format", defaultFormat, "openai.chat, openai.responses, anthropic.messages, gemini or raw "+defaultUsage)
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "token budget: the model's context window; the oldest turns past it are dropped (0: no budget)")
	fs.IntVar(&f.reserve, "reserve", 0, "with --max-tokens: tokens kept free for the reply (also anthropic.messages' max_tokens)")
	fs.IntVar(&f.keepTurns, "keep-turns", 0, "with --max-tokens: the last turns kept whatever they cost (default 1)")
	fs.StringVar(&f.encoding, "encoding", "", "with --max-tokens: count tokens exactly with o200k_base or cl100k_base (default: an estimate)")
}

// budget returns the token budget the flags ask for, or nil.
func (f *formatFlags) budget() *streams.TokenBudget {
	if f.maxTokens == 0 {
		return nil
	}
	return &streams.TokenBudget{MaxTokens: f.maxTokens, Reserve: f.reserve, KeepTurns: f.keepTurns, Encoding: f.encoding}
}
