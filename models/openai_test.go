package models_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/convstream/convstream/models"
)

func openAIChunk(delta map[string]any, finish any) string {
	return "data: " + jsonLine(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-2026",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
}

// TestOpenAIStream streams text, reasoning (as vLLM sends it) and a tool
// call whose arguments arrive in pieces from a server speaking the Chat
// Completions SSE format, through openai-go, and checks the request the
// SDK sent: the worker's body with the model, stream and usage set.
func TestOpenAIStream(t *testing.T) {
	srv := newSSEServer(t, func(t *testing.T, path string, body map[string]any) {
		if path != "/v1/chat/completions?" {
			t.Errorf("path %q", path)
		}
		if body["model"] != "gpt-test" || body["stream"] != true {
			t.Errorf("model %v, stream %v", body["model"], body["stream"])
		}
		if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
			t.Errorf("stream_options %v", body["stream_options"])
		}
		if tools, _ := body["tools"].([]any); len(tools) != 1 {
			t.Errorf("tools %v", body["tools"])
		}
		if msgs, _ := body["messages"].([]any); len(msgs) != 1 {
			t.Errorf("messages %v", body["messages"])
		}
	}, func(_ int, w http.ResponseWriter) {
		writeSSE(w,
			openAIChunk(map[string]any{"role": "assistant", "content": ""}, nil),
			openAIChunk(map[string]any{"reasoning_content": "Thinking."}, nil),
			openAIChunk(map[string]any{"content": "Hel"}, nil),
			openAIChunk(map[string]any{"content": "lo"}, nil),
			openAIChunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "search", "arguments": ""}}}}, nil),
			openAIChunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"q":`}}}}, nil),
			openAIChunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `"x"}`}}}}, nil),
			openAIChunk(map[string]any{}, "tool_calls"),
			"data: "+jsonLine(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test-2026", "choices": []any{},
				"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}),
			"data: [DONE]")
	})
	m := open(t, "openai:gpt-test", map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1"})
	r, res, err := collect(t, m, models.Request{
		Body:  map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		Tools: []models.Tool{{Name: "search", Description: "searches"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.text != "Hello" || r.reasoning != "Thinking." {
		t.Errorf("text %q, reasoning %q", r.text, r.reasoning)
	}
	if c := r.calls[0]; c == nil || c.ID != "call_1" || c.Name != "search" || c.Arguments != `{"q":"x"}` {
		t.Errorf("tool call %+v", c)
	}
	if res.FinishReason != "tool_calls" || res.Model != "gpt-test-2026" || res.Provider != "openai" {
		t.Errorf("result %+v", res)
	}
	if u := res.Usage; u == nil || u.InputTokens != 11 || u.OutputTokens != 7 || u.TotalTokens != 18 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// TestRetries checks that 429 and 5xx are tried again, up to the limit,
// and that other refusals are not, each mapped to LobeHub's error type.
func TestRetries(t *testing.T) {
	retry := models.WithRetry(models.Retry{Retries: 2, Delay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
	ok := func(w http.ResponseWriter) {
		writeSSE(w, openAIChunk(map[string]any{"content": "ok"}, "stop"), "data: [DONE]")
	}
	for _, tc := range []struct {
		name      string
		answer    func(n int, w http.ResponseWriter)
		calls     int32
		wantType  models.ErrorType
		wantCode  string
		wantReply string
	}{
		{"429 then ok", func(n int, w http.ResponseWriter) {
			if n < 3 {
				writeError(w, 429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
				return
			}
			ok(w)
		}, 3, "", "", "ok"},
		{"503 every time", func(_ int, w http.ResponseWriter) {
			writeError(w, 503, `{"error":{"message":"overloaded","type":"server_error","code":null}}`)
		}, 3, models.ErrProviderBiz, "server_error", ""},
		{"429 every time", func(_ int, w http.ResponseWriter) {
			writeError(w, 429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
		}, 3, models.ErrQuotaLimitReached, "rate_limit_exceeded", ""},
		{"401", func(_ int, w http.ResponseWriter) {
			writeError(w, 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
		}, 1, models.ErrInvalidAPIKey, "invalid_api_key", ""},
		{"context too long", func(_ int, w http.ResponseWriter) {
			writeError(w, 400, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`)
		}, 1, models.ErrExceededContextWindow, "context_length_exceeded", ""},
		{"error event after text", func(_ int, w http.ResponseWriter) {
			writeSSE(w, openAIChunk(map[string]any{"content": "par"}, nil), `data: {"error":{"message":"upstream failed","type":"server_error"}}`)
		}, 1, models.ErrProviderBiz, "stream_error", "par"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newSSEServer(t, nil, tc.answer)
			m := open(t, "openai:m", map[string]string{"OPENAI_API_KEY": "sk-secret-key", "OPENAI_BASE_URL": srv.URL}, retry)
			r, _, err := collect(t, m, models.Request{Body: map[string]any{"messages": []any{}}})
			if got := srv.calls.Load(); got != tc.calls {
				t.Errorf("%d calls, want %d", got, tc.calls)
			}
			if r.text != tc.wantReply {
				t.Errorf("reply %q, want %q", r.text, tc.wantReply)
			}
			if tc.wantType == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *models.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *models.Error", err, err)
			}
			if e.Type != tc.wantType || e.Code != tc.wantCode {
				t.Errorf("error type %s code %q, want %s %q (%v)", e.Type, e.Code, tc.wantType, tc.wantCode, e)
			}
		})
	}
}

// TestStreamCanceled checks that a call whose context ends while the
// model writes returns the context's error, with what was written so far
// emitted.
func TestStreamCanceled(t *testing.T) {
	release := make(chan struct{})
	srv := newSSEServer(t, nil, func(_ int, w http.ResponseWriter) {
		writeSSE(w, openAIChunk(map[string]any{"content": "partial"}, nil))
		<-release
	})
	defer close(release)
	m := open(t, "openai:m", map[string]string{"OPENAI_BASE_URL": srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	var got string
	_, err := m.Stream(ctx, models.Request{Body: map[string]any{"messages": []any{}}}, func(d models.Delta) error {
		got += d.Text
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || got != "partial" {
		t.Fatalf("err %v, text %q", err, got)
	}
}
