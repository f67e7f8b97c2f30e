package providers

import "fmt"

// CacheBreakpoints says where an Anthropic request marks prompt-cache
// breakpoints (cache_control), as LibreChat's agents and LiteLLM's
// injection points do; other formats have no such markers and ignore it.
// The API takes at most four: tools, then the system, then the most recent
// user turns get them, in that order.
type CacheBreakpoints struct {
	// System marks the system prompt.
	System bool `json:"system,omitempty"`
	// Tools marks the last tool declared.
	Tools bool `json:"tools,omitempty"`
	// LastUserTurns marks the last block of this many of the last user
	// turns.
	LastUserTurns int `json:"lastUserTurns,omitempty"`
	// TTL is how long the cache lives: "5m" (the default) or "1h".
	TTL string `json:"ttl,omitempty"`
}

// maxBreakpoints is how many cache_control markers the Anthropic API takes
// in one request.
const maxBreakpoints = 4

// Check reports what is wrong with c.
func (c CacheBreakpoints) Check() error {
	if c.LastUserTurns < 0 {
		return fmt.Errorf("cache.lastUserTurns: must not be negative, got %d", c.LastUserTurns)
	}
	if c.TTL != "" && c.TTL != "5m" && c.TTL != "1h" {
		return fmt.Errorf(`cache.ttl: want "5m" or "1h", got %q`, c.TTL)
	}
	return nil
}

// WithCacheBreakpoints marks an Anthropic request's prompt-cache
// breakpoints.
func WithCacheBreakpoints(c CacheBreakpoints) Option {
	return func(o *options) { o.cache = &c }
}

// markCache adds the breakpoints c asks for to an Anthropic body.
func markCache(body map[string]any, c CacheBreakpoints) {
	ttl := c.TTL
	if ttl == "" {
		ttl = "5m"
	}
	left := maxBreakpoints
	mark := func(block any) {
		if b, ok := block.(map[string]any); ok && left > 0 {
			b["cache_control"] = map[string]any{"type": "ephemeral", "ttl": ttl}
			left--
		}
	}
	if tools, _ := body["tools"].([]any); c.Tools && len(tools) > 0 {
		mark(tools[len(tools)-1])
	}
	if system, _ := body["system"].([]any); c.System && len(system) > 0 {
		mark(system[len(system)-1])
	}
	msgs, _ := body["messages"].([]map[string]any)
	for i, n := len(msgs)-1, 0; i >= 0 && n < c.LastUserTurns && left > 0; i-- {
		if msgs[i]["role"] != "user" {
			continue
		}
		if blocks, _ := msgs[i]["content"].([]any); len(blocks) > 0 {
			mark(blocks[len(blocks)-1])
			n++
		}
	}
}
