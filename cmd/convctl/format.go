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
	profile                       providers.Profile
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
	fs.StringVar(&f.profile.Model, "model", "", "the model the request is for (claude-sonnet-4-6, gemini-3-pro-preview, ...): decides what auto allows")
	fs.Func("prefill", "a context that ends with the assistant's turn: auto (default: kept for Claude before 4.6 and Gemini before 3), keep or drop", func(s string) error {
		f.profile.Prefill = providers.Prefill(s)
		return f.profile.Check()
	})
	fs.Func("signatures", "provider fields sent back: auto (default: kept ones, and Gemini's documented fallback for calls without), keep or drop", func(s string) error {
		f.profile.Signatures = providers.Signatures(s)
		return f.profile.Check()
	})
	fs.Func("function-turns", "gemini: function responses separate (default) or merged with the user's next text", func(s string) error {
		f.profile.FunctionTurns = providers.FunctionTurns(s)
		return f.profile.Check()
	})
	fs.Func("assistant-images", "images in assistant turns: auto (default: notes for Anthropic), keep or note", func(s string) error {
		f.profile.AssistantImages = providers.AssistantImages(s)
		return f.profile.Check()
	})
}

// requestProfile returns the profile the flags ask for, or nil.
func (f *formatFlags) requestProfile() *providers.Profile {
	if f.profile == (providers.Profile{}) {
		return nil
	}
	p := f.profile
	return &p
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
