package models

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/convstream/convstream/providers"
)

// DefaultGeminiBaseURL is where Gemini's API is served.
const DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com"

// maxGeminiEvent bounds one server-sent event of a Gemini stream.
const maxGeminiEvent = 16 << 20

// Gemini is a model behind the Gemini API, called through its REST
// streaming endpoint (streamGenerateContent with alt=sse): Google's Go SDK
// is not among the modules this project may use.
type Gemini struct {
	model, key, baseURL string
	hc                  *http.Client
}

// NewGemini returns the Gemini model named model, called with key at
// baseURL ("" for DefaultGeminiBaseURL) through hc (nil for
// http.DefaultClient).
func NewGemini(model, key, baseURL string, hc *http.Client) *Gemini {
	if baseURL == "" {
		baseURL = DefaultGeminiBaseURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Gemini{model: model, key: key, baseURL: strings.TrimSuffix(baseURL, "/"), hc: hc}
}

// Name returns "gemini:" and the model.
func (m *Gemini) Name() string { return "gemini:" + m.model }

// Format returns gemini.
func (*Gemini) Format() providers.Format { return providers.FormatGemini }

// geminiChunk is the part of a GenerateContentResponse a reply is read
// from.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text             string `json:"text"`
				Thought          bool   `json:"thought"`
				ThoughtSignature string `json:"thoughtSignature"`
				FunctionCall     *struct {
					ID   string         `json:"id"`
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		TotalTokenCount         int64 `json:"totalTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string       `json:"modelVersion"`
	Error        *geminiError `json:"error"`
}

type geminiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// Stream calls streamGenerateContent with the body (and tools).
func (m *Gemini) Stream(ctx context.Context, req Request, emit func(Delta) error) (*Result, error) {
	body := maps.Clone(req.Body)
	if len(req.Tools) > 0 {
		decls := make([]any, len(req.Tools))
		for i, t := range req.Tools {
			d := map[string]any{"name": t.Name, "parameters": schemaOf(t)}
			if t.Description != "" {
				d["description"] = t.Description
			}
			decls[i] = d
		}
		body["tools"] = []any{map[string]any{"functionDeclarations": decls}}
	}
	if req.MaxTokens > 0 {
		gc, _ := body["generationConfig"].(map[string]any)
		gc = maps.Clone(gc)
		if gc == nil {
			gc = map[string]any{}
		}
		gc["maxOutputTokens"] = req.MaxTokens
		body["generationConfig"] = gc
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{Type: ErrAgentRuntime, Code: "bad_request", Message: err.Error(), Err: err}
	}
	u := m.baseURL + "/v1beta/models/" + url.PathEscape(m.model) + ":streamGenerateContent?alt=sse"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, runtimeError(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("x-goog-api-key", m.key)
	resp, err := m.hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, runtimeError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct{ Error geminiError }
		_ = json.Unmarshal(raw, &e)
		msg := e.Error.Message
		if msg == "" {
			msg = strings.TrimSpace(string(raw))
		}
		return nil, withRetryAfter(statusError(resp.StatusCode, e.Error.Status, msg, fmt.Errorf("gemini: %s", resp.Status)), resp.Header)
	}
	res := &Result{Provider: "gemini", Model: m.model}
	calls := 0
	err = readSSE(resp.Body, func(data []byte) error {
		var c geminiChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return &Error{Type: ErrStreamChunk, Message: err.Error(), Err: err}
		}
		if c.Error != nil {
			return statusError(c.Error.Code, c.Error.Status, c.Error.Message, nil)
		}
		if c.ModelVersion != "" {
			res.Model = c.ModelVersion
		}
		if u := c.UsageMetadata; u != nil {
			res.Usage = &Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
				TotalTokens: u.TotalTokenCount, ReasoningTokens: u.ThoughtsTokenCount, CachedTokens: u.CachedContentTokenCount}
		}
		if len(c.Candidates) == 0 {
			return nil
		}
		cand := c.Candidates[0]
		var d Delta
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				if p.FunctionCall.Args == nil {
					args = []byte("{}")
				}
				id := p.FunctionCall.ID
				if id == "" {
					id = fmt.Sprintf("call_%d", calls)
				}
				d.ToolCalls = append(d.ToolCalls, ToolCallDelta{Index: calls, ID: id, Name: p.FunctionCall.Name, Arguments: string(args)})
				if p.ThoughtSignature != "" {
					if res.ThoughtSignatures == nil {
						res.ThoughtSignatures = map[int]string{}
					}
					res.ThoughtSignatures[calls] = p.ThoughtSignature
				}
				calls++
			case p.Thought:
				d.Reasoning += p.Text
			default:
				d.Text += p.Text
				if p.ThoughtSignature != "" && res.ProviderFields == nil {
					res.ProviderFields = map[string]any{"thoughtSignature": p.ThoughtSignature}
				}
			}
		}
		if cand.FinishReason != "" {
			res.FinishReason = geminiFinish(cand.FinishReason, calls > 0)
		}
		if d.empty() {
			return nil
		}
		return emit(d)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, runtimeError(err)
	}
	return res, nil
}

// geminiFinish maps Gemini's finish reasons to OpenAI's.
func geminiFinish(r string, called bool) string {
	switch r {
	case "STOP":
		if called {
			return "tool_calls"
		}
		return "stop"
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	return strings.ToLower(r)
}

// readSSE passes the data of each server-sent event read from r to fn,
// until r ends or fn fails.
func readSSE(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxGeminiEvent)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if len(data) > 0 {
				if err := fn(data); err != nil {
					return err
				}
				data = data[:0]
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(data) > 0 {
		return fn(data)
	}
	return nil
}
