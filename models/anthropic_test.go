package models_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/convstream/convstream/models"
)

func anthropicEvent(typ string, data map[string]any) string {
	data["type"] = typ
	return "event: " + typ + "\ndata: " + jsonLine(data)
}

// TestAnthropicStream streams thinking with its signature, text and a
// tool call from a server speaking the Messages SSE format, through
// anthropic-sdk-go.
func TestAnthropicStream(t *testing.T) {
	srv := newSSEServer(t, func(t *testing.T, path string, body map[string]any) {
		if path != "/v1/messages?" {
			t.Errorf("path %q", path)
		}
		if body["model"] != "claude-test" || body["stream"] != true || body["max_tokens"] != float64(1024) {
			t.Errorf("model %v, stream %v, max_tokens %v", body["model"], body["stream"], body["max_tokens"])
		}
		if tools, _ := body["tools"].([]any); len(tools) != 1 {
			t.Errorf("tools %v", body["tools"])
		}
	}, func(_ int, w http.ResponseWriter) {
		writeSSE(w,
			anthropicEvent("message_start", map[string]any{"message": map[string]any{
				"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-2026", "content": []any{},
				"stop_reason": nil, "usage": map[string]any{"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 5}}}),
			anthropicEvent("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "thinking_delta", "thinking": "Let me see."}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "signature_delta", "signature": "sig-1"}}),
			anthropicEvent("content_block_stop", map[string]any{"index": 0}),
			"event: ping\ndata: {\"type\": \"ping\"}",
			anthropicEvent("content_block_start", map[string]any{"index": 1, "content_block": map[string]any{"type": "text", "text": ""}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "text_delta", "text": "Hi "}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "text_delta", "text": "there"}}),
			anthropicEvent("content_block_stop", map[string]any{"index": 1}),
			anthropicEvent("content_block_start", map[string]any{"index": 2, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "search", "input": map[string]any{}}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 2, "delta": map[string]any{"type": "input_json_delta", "partial_json": `{"q": `}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 2, "delta": map[string]any{"type": "input_json_delta", "partial_json": `"x"}`}}),
			anthropicEvent("content_block_stop", map[string]any{"index": 2}),
			anthropicEvent("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 30}}),
			anthropicEvent("message_stop", map[string]any{}))
	})
	m := open(t, "anthropic:claude-test", map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": srv.URL})
	r, res, err := collect(t, m, models.Request{
		Body:  map[string]any{"max_tokens": 1024, "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}},
		Tools: []models.Tool{{Name: "search"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.text != "Hi there" || r.reasoning != "Let me see." {
		t.Errorf("text %q, reasoning %q", r.text, r.reasoning)
	}
	if c := r.calls[0]; c == nil || c.ID != "toolu_1" || c.Name != "search" || c.Arguments != `{"q": "x"}` {
		t.Errorf("tool call %+v", c)
	}
	if res.FinishReason != "tool_calls" || res.Model != "claude-test-2026" || res.ReasoningSignature != "sig-1" {
		t.Errorf("result %+v", res)
	}
	if th, _ := res.ProviderFields["thinking"].([]any); len(th) != 1 || jsonLine(th[0]) != `{"signature":"sig-1","thinking":"Let me see.","type":"thinking"}` {
		t.Errorf("provider fields %v", res.ProviderFields)
	}
	if u := res.Usage; u.InputTokens != 25 || u.OutputTokens != 30 || u.CachedTokens != 5 || u.TotalTokens != 55 {
		t.Errorf("usage %+v", u)
	}
}

// TestAnthropicErrors checks an overloaded answer is tried again and an
// error event in the stream ends the reply as the provider's error.
func TestAnthropicErrors(t *testing.T) {
	srv := newSSEServer(t, nil, func(n int, w http.ResponseWriter) {
		if n == 1 {
			writeError(w, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		writeSSE(w,
			anthropicEvent("message_start", map[string]any{"message": map[string]any{"id": "m", "type": "message", "role": "assistant", "model": "c", "content": []any{}, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}}),
			anthropicEvent("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
			anthropicEvent("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "part"}}),
			"event: error\ndata: "+jsonLine(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "Internal server error"}}))
	})
	m := open(t, "anthropic:c", map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL},
		models.WithRetry(models.Retry{Retries: 3, Delay: time.Millisecond, MaxDelay: time.Millisecond}))
	r, _, err := collect(t, m, models.Request{Body: map[string]any{"max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}}})
	var e *models.Error
	if !errors.As(err, &e) || e.Type != models.ErrProviderBiz || e.Code != "api_error" || e.Message != "Internal server error" {
		t.Fatalf("error %v", err)
	}
	if r.text != "part" || srv.calls.Load() != 2 {
		t.Errorf("text %q after %d calls", r.text, srv.calls.Load())
	}
}
