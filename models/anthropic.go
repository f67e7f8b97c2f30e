package models

import (
	"context"
	"errors"
	"maps"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/convstream/convstream/providers"
)

// Anthropic is a model behind the Anthropic Messages API, called through
// anthropic-sdk-go's streaming API.
type Anthropic struct {
	model  string
	client anthropic.Client
}

// NewAnthropic returns the Anthropic model named model, called with key
// at baseURL ("" for Anthropic's) through hc (nil for
// http.DefaultClient). The SDK's own retries are off: WithRetries retries.
func NewAnthropic(model, key, baseURL string, hc *http.Client) *Anthropic {
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(0)}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return &Anthropic{model: model, client: anthropic.NewClient(opts...)}
}

// Name returns "anthropic:" and the model.
func (m *Anthropic) Name() string { return "anthropic:" + m.model }

// Format returns anthropic.messages.
func (*Anthropic) Format() providers.Format { return providers.FormatAnthropic }

// anthropicFinish maps Anthropic's stop reasons to OpenAI's finish reasons.
var anthropicFinish = map[string]string{
	"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
	"max_tokens": "length", "model_context_window_exceeded": "length",
	"tool_use": "tool_calls", "refusal": "content_filter",
}

// Stream calls the model with the body, its model (and tools) set.
func (m *Anthropic) Stream(ctx context.Context, req Request, emit func(Delta) error) (*Result, error) {
	body := maps.Clone(req.Body)
	if len(req.Tools) > 0 {
		tools := make([]any, len(req.Tools))
		for i, t := range req.Tools {
			tool := map[string]any{"name": t.Name, "input_schema": schemaOf(t)}
			if t.Description != "" {
				tool["description"] = t.Description
			}
			tools[i] = tool
		}
		body["tools"] = tools
	}
	if req.MaxTokens > 0 {
		body["max_tokens"] = req.MaxTokens
	}
	var p anthropic.MessageNewParams
	if err := remarshal(body, &p); err != nil {
		return nil, &Error{Type: ErrAgentRuntime, Code: "bad_request", Message: "the context is not a Messages request: " + err.Error(), Err: err}
	}
	p.Model = anthropic.Model(m.model)
	stream := m.client.Messages.NewStreaming(ctx, p)
	defer stream.Close()
	res := &Result{Provider: "anthropic", Model: m.model, Usage: &Usage{}}
	tools := map[int64]int{} // content block index → tool call index
	// thinking holds the thinking blocks as the API returned them, by
	// content block index, which a later request must send back whole.
	var thinking []map[string]any
	thinkingAt := map[int64]map[string]any{}
	for stream.Next() {
		ev := stream.Current()
		var d Delta
		switch ev.Type {
		case "message_start":
			if ev.Message.Model != "" {
				res.Model = string(ev.Message.Model)
			}
			u := ev.Message.Usage
			res.Usage.InputTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			res.Usage.CachedTokens = u.CacheReadInputTokens
			res.Usage.OutputTokens = u.OutputTokens
		case "content_block_start":
			b := ev.ContentBlock
			switch b.Type {
			case "tool_use":
				i := len(tools)
				tools[ev.Index] = i
				d.ToolCalls = []ToolCallDelta{{Index: i, ID: b.ID, Name: b.Name}}
			case "thinking":
				d.Reasoning = b.Thinking
				res.ReasoningSignature += b.Signature
				blk := map[string]any{"type": "thinking", "thinking": b.Thinking, "signature": b.Signature}
				thinking, thinkingAt[ev.Index] = append(thinking, blk), blk
			case "redacted_thinking":
				thinking = append(thinking, map[string]any{"type": "redacted_thinking", "data": b.Data})
			case "text":
				d.Text = b.Text
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				d.Text = ev.Delta.Text
			case "thinking_delta":
				d.Reasoning = ev.Delta.Thinking
				if blk := thinkingAt[ev.Index]; blk != nil {
					blk["thinking"] = blk["thinking"].(string) + ev.Delta.Thinking
				}
			case "signature_delta":
				res.ReasoningSignature += ev.Delta.Signature
				if blk := thinkingAt[ev.Index]; blk != nil {
					blk["signature"] = blk["signature"].(string) + ev.Delta.Signature
				}
			case "input_json_delta":
				if i, ok := tools[ev.Index]; ok && ev.Delta.PartialJSON != "" {
					d.ToolCalls = []ToolCallDelta{{Index: i, Arguments: ev.Delta.PartialJSON}}
				}
			}
		case "message_delta":
			if r := string(ev.Delta.StopReason); r != "" {
				res.FinishReason = anthropicFinish[r]
				if res.FinishReason == "" {
					res.FinishReason = r
				}
			}
			if ev.Usage.OutputTokens > 0 {
				res.Usage.OutputTokens = ev.Usage.OutputTokens
			}
		}
		if d.empty() {
			continue
		}
		if err := emit(d); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, anthropicError(err)
	}
	res.Usage.TotalTokens = res.Usage.InputTokens + res.Usage.OutputTokens
	if len(thinking) > 0 {
		blocks := make([]any, len(thinking))
		for i, b := range thinking {
			blocks[i] = b
		}
		res.ProviderFields = map[string]any{"thinking": blocks}
	}
	return res, nil
}

// anthropicError maps what anthropic-sdk-go failed with to an Error.
func anthropicError(err error) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		status := ae.StatusCode
		if status == 0 && ae.Type() == "overloaded_error" {
			status = 529 // an error event in the stream has no status; overloaded is Anthropic's 529
		}
		msg := ae.Message
		if msg == "" {
			msg = http.StatusText(ae.StatusCode)
		}
		e := statusError(status, string(ae.Type()), msg, err)
		if ae.Response != nil {
			withRetryAfter(e, ae.Response.Header)
		}
		return e
	}
	return runtimeError(err)
}
