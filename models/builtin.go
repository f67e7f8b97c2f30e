package models

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/convstream/convstream/providers"
)

// The defaults of BuiltinConfig.
const (
	DefaultBuiltinTokens         = 48
	DefaultBuiltinTokensPerChunk = 1
	DefaultBuiltinRate           = 30 // tokens a second
)

// BuiltinConfig sets what Builtin writes and how fast.
type BuiltinConfig struct {
	// Tokens is the reply's length in tokens (words), beyond its opening
	// line.
	Tokens int
	// TokensPerChunk is how many tokens each delta carries.
	TokensPerChunk int
	// Rate is how many tokens a second it writes; 0 writes as fast as the
	// reader takes them.
	Rate float64
}

// DefaultBuiltinConfig returns the configuration Open gives "builtin".
func DefaultBuiltinConfig() BuiltinConfig {
	return BuiltinConfig{Tokens: DefaultBuiltinTokens, TokensPerChunk: DefaultBuiltinTokensPerChunk, Rate: DefaultBuiltinRate}
}

// Builtin is a model that needs no key and no network: it answers the last
// message with deterministic text (the same context gives the same reply)
// at a set rate. Offered tools after a user's message, it calls the first
// one with the message as {"input": ...}; after a tool's result it answers
// in text again, so that an application that runs the tools sees a whole
// turn.
type Builtin struct {
	cfg BuiltinConfig
}

// NewBuiltin returns a Builtin writing as cfg says.
func NewBuiltin(cfg BuiltinConfig) (*Builtin, error) {
	if cfg.Tokens < 0 || cfg.TokensPerChunk <= 0 || cfg.Rate < 0 {
		return nil, fmt.Errorf("models: builtin: tokens %d, tokens per chunk %d, rate %v: want tokens ≥ 0, tokens per chunk > 0, rate ≥ 0",
			cfg.Tokens, cfg.TokensPerChunk, cfg.Rate)
	}
	return &Builtin{cfg: cfg}, nil
}

// Name returns "builtin".
func (*Builtin) Name() string { return "builtin" }

// Format returns openai.chat: Builtin reads a request's Messages.
func (*Builtin) Format() providers.Format { return providers.FormatOpenAIChat }

// builtinWords are what Builtin's replies are made of.
var builtinWords = strings.Fields(`the stream carries every chunk of this reply to each screen that follows the
conversation a screen that joins late reads the text so far and then the rest stopping ends the reply
with what was written and a new branch starts when it is written again nothing here needs a key or a
network this model only shows the path from a message to its answer`)

// Stream writes the reply.
func (b *Builtin) Stream(ctx context.Context, req Request, emit func(Delta) error) (*Result, error) {
	role, last := lastMessage(req.Messages)
	res := &Result{Model: "builtin", Provider: "builtin", FinishReason: "stop",
		Usage: &Usage{InputTokens: int64(countWords(req.Messages))}}
	pace := newPacer(b.cfg.Rate)
	defer pace.stop()
	if len(req.Tools) > 0 && role == "user" {
		args, _ := json.Marshal(map[string]string{"input": last})
		call := ToolCallDelta{Index: 0, ID: fmt.Sprintf("call_%08x", hash(last)), Name: req.Tools[0].Name}
		if err := pace.wait(ctx, 1); err != nil {
			return nil, err
		}
		if err := emit(Delta{ToolCalls: []ToolCallDelta{call}}); err != nil {
			return nil, err
		}
		// The arguments arrive in pieces, as a provider's do.
		for s := string(args); s != ""; {
			n := min(len(s), 8)
			if err := pace.wait(ctx, 1); err != nil {
				return nil, err
			}
			if err := emit(Delta{ToolCalls: []ToolCallDelta{{Index: 0, Arguments: s[:n]}}}); err != nil {
				return nil, err
			}
			s = s[n:]
			res.Usage.OutputTokens++
		}
		res.FinishReason = "tool_calls"
		res.Usage.TotalTokens = res.Usage.InputTokens + res.Usage.OutputTokens
		return res, nil
	}
	tokens := b.tokens(role, last)
	max := len(tokens)
	if req.MaxTokens > 0 && req.MaxTokens < max {
		max, res.FinishReason = req.MaxTokens, "length"
	}
	for i := 0; i < max; i += b.cfg.TokensPerChunk {
		j := min(i+b.cfg.TokensPerChunk, max)
		if err := pace.wait(ctx, j-i); err != nil {
			return nil, err
		}
		if err := emit(Delta{Text: strings.Join(tokens[i:j], "")}); err != nil {
			return nil, err
		}
		res.Usage.OutputTokens = int64(j)
	}
	res.Usage.TotalTokens = res.Usage.InputTokens + res.Usage.OutputTokens
	return res, nil
}

// tokens returns the reply to a last message of role role and text text,
// one token a word with its following space.
func (b *Builtin) tokens(role, text string) []string {
	opening := "Hello! "
	switch {
	case role == "tool":
		opening = fmt.Sprintf("The tool answered %q. ", clip(text, 80))
	case text != "":
		opening = fmt.Sprintf("You said %q. ", clip(text, 80))
	}
	out := strings.SplitAfter(opening, " ")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	h := hash(text)
	for i := range b.cfg.Tokens {
		w := builtinWords[(h+uint32(i)*7)%uint32(len(builtinWords))]
		if i == b.cfg.Tokens-1 {
			w += "."
		} else {
			w += " "
		}
		out = append(out, w)
	}
	return out
}

// lastMessage returns the role and text of the last of msgs.
func lastMessage(msgs []map[string]any) (role, text string) {
	if len(msgs) == 0 {
		return "", ""
	}
	m := msgs[len(msgs)-1]
	role, _ = m["role"].(string)
	return role, contentText(m["content"])
}

// contentText returns the text of an OpenAI message's content: a string
// or text parts.
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				if s, ok := pm["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

func countWords(msgs []map[string]any) int {
	n := 0
	for _, m := range msgs {
		n += len(strings.Fields(contentText(m["content"])))
	}
	return n
}

func hash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// clip shortens s to n bytes at most, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// pacer spaces tokens out to a rate.
type pacer struct {
	per  time.Duration // 0: no pacing
	next time.Time
	t    *time.Timer
}

func newPacer(rate float64) *pacer {
	p := &pacer{}
	if rate > 0 {
		p.per = time.Duration(float64(time.Second) / rate)
		p.next = time.Now()
	}
	return p
}

// wait waits until n more tokens are due.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p.per == 0 {
		return ctx.Err()
	}
	p.next = p.next.Add(time.Duration(n) * p.per)
	d := time.Until(p.next)
	if d <= 0 {
		return ctx.Err()
	}
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.t.C:
		return nil
	}
}

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}
