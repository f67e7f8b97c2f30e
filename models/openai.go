package models

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/convstream/convstream/providers"
)

// OpenAI is a model behind the OpenAI Chat Completions API, called through
// openai-go's streaming API: OpenAI's own, or any server that speaks the
// API (vLLM, Ollama, LiteLLM) through its base URL.
type OpenAI struct {
	model  string
	client openai.Client
}

// NewOpenAI returns the OpenAI model named model, called with key (which
// may be empty for a local server that wants none) at baseURL ("" for
// OpenAI's) through hc (nil for http.DefaultClient). The SDK's own
// retries are off: WithRetries retries.
func NewOpenAI(model, key, baseURL string, hc *http.Client) *OpenAI {
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(0)}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return &OpenAI{model: model, client: openai.NewClient(opts...)}
}

// Name returns "openai:" and the model.
func (m *OpenAI) Name() string { return "openai:" + m.model }

// Format returns openai.chat.
func (*OpenAI) Format() providers.Format { return providers.FormatOpenAIChat }

// Stream calls the model with the body, its model set and usage asked
// for.
func (m *OpenAI) Stream(ctx context.Context, req Request, emit func(Delta) error) (*Result, error) {
	var p openai.ChatCompletionNewParams
	if err := remarshal(req.Body, &p); err != nil {
		return nil, &Error{Type: ErrAgentRuntime, Code: "bad_request", Message: "the context is not a Chat Completions request: " + err.Error(), Err: err}
	}
	p.Model = m.model
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if len(req.Tools) > 0 {
		p.Tools = make([]openai.ChatCompletionToolUnionParam, len(req.Tools))
		for i, t := range req.Tools {
			fn := openai.FunctionDefinitionParam{Name: t.Name, Parameters: openai.FunctionParameters(schemaOf(t))}
			if t.Description != "" {
				fn.Description = openai.String(t.Description)
			}
			p.Tools[i] = openai.ChatCompletionFunctionTool(fn)
		}
	}
	stream := m.client.Chat.Completions.NewStreaming(ctx, p)
	defer stream.Close()
	res := &Result{Provider: "openai", Model: m.model}
	for stream.Next() {
		c := stream.Current()
		if c.Model != "" {
			res.Model = c.Model
		}
		if c.JSON.Usage.Valid() {
			u := c.Usage
			res.Usage = &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
				ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens, CachedTokens: u.PromptTokensDetails.CachedTokens}
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue // one reply: n is never set
			}
			if ch.FinishReason != "" {
				res.FinishReason = ch.FinishReason
			}
			d := Delta{Text: ch.Delta.Content, Reasoning: openAIReasoning(ch.Delta)}
			if ch.Delta.Refusal != "" {
				d.Text += ch.Delta.Refusal
			}
			for _, tc := range ch.Delta.ToolCalls {
				d.ToolCalls = append(d.ToolCalls, ToolCallDelta{Index: int(tc.Index), ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			if d.empty() {
				continue
			}
			if err := emit(d); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, openAIError(err)
	}
	return res, nil
}

// openAIReasoning returns the reasoning text of a delta: OpenAI's API has
// none, but the servers that speak it send it as reasoning_content (vLLM,
// DeepSeek) or reasoning (Ollama, OpenRouter).
func openAIReasoning(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, name := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[name]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

// openAIError maps what openai-go failed with to an Error.
func openAIError(err error) error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		code := ae.Code
		if code == "" {
			code = ae.Type
		}
		msg := ae.Message
		if msg == "" {
			msg = ae.Error()
		}
		e := statusError(ae.StatusCode, code, msg, err)
		if ae.Response != nil {
			withRetryAfter(e, ae.Response.Header)
		}
		return e
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error event in the stream ends a reply that had begun: the
		// provider's failure, not ours.
		return &Error{Type: ErrProviderBiz, Code: "stream_error", Message: se.Message, Err: err}
	}
	return runtimeError(err)
}

// remarshal copies v into p through JSON.
func remarshal(v any, p any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, p)
}

// schemaOf returns a tool's parameters schema, an open object when it has
// none.
func schemaOf(t Tool) map[string]any {
	if t.Parameters != nil {
		return t.Parameters
	}
	return map[string]any{"type": "object"}
}
