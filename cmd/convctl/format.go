package main

import (
	"flag"

	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
)

// formatFlags are the flags that shape an inference context: its format
// and token budget (docs/events.md, "Formats").
type formatFlags struct {
	format                        string
	maxTokens, reserve, keepTurns int
	encoding                      string
	cache                         providers.CacheBreakpoints
}

func (f *formatFlags) register(fs *flag.FlagSet, defaultFormat, defaultUsage string) {
	fs.StringVar(&f.format, "format", defaultFormat, "openai.chat, openai.responses, anthropic.messages, gemini or raw "+defaultUsage)
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "token budget: the model's context window; the oldest turns past it are dropped (0: no budget)")
	fs.IntVar(&f.reserve, "reserve", 0, "with --max-tokens: tokens kept free for the reply (also anthropic.messages' max_tokens)")
	fs.IntVar(&f.keepTurns, "keep-turns", 0, "with --max-tokens: the last turns kept whatever they cost (default 1)")
	fs.StringVar(&f.encoding, "encoding", "", "with --max-tokens: count tokens exactly with o200k_base or cl100k_base (default: an estimate)")
	fs.BoolVar(&f.cache.System, "cache-system", false, "anthropic.messages: a prompt-cache breakpoint on the system prompt")
	fs.BoolVar(&f.cache.Tools, "cache-tools", false, "anthropic.messages: a prompt-cache breakpoint on the tools")
	fs.IntVar(&f.cache.LastUserTurns, "cache-last-user-turns", 0, "anthropic.messages: prompt-cache breakpoints on this many of the last user turns")
	fs.StringVar(&f.cache.TTL, "cache-ttl", "", "anthropic.messages: the breakpoints' cache lifetime, 5m (default) or 1h")
}

// cacheBreakpoints returns the breakpoints the flags ask for, or nil.
func (f *formatFlags) cacheBreakpoints() *providers.CacheBreakpoints {
	if f.cache == (providers.CacheBreakpoints{}) {
		return nil
	}
	c := f.cache
	return &c
}

// budget returns the token budget the flags ask for, or nil.
func (f *formatFlags) budget() *streams.TokenBudget {
	if f.maxTokens == 0 {
		return nil
	}
	return &streams.TokenBudget{MaxTokens: f.maxTokens, Reserve: f.reserve, KeepTurns: f.keepTurns, Encoding: f.encoding}
}
