package models_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/convstream/convstream/models"
)

// TestGeminiStream streams thoughts, text and a function call with its
// thought signature from a server speaking streamGenerateContent's
// alt=sse format.
func TestGeminiStream(t *testing.T) {
	srv := newSSEServer(t, func(t *testing.T, path string, body map[string]any) {
		if path != "/v1beta/models/gemini-test:streamGenerateContent?alt=sse" {
			t.Errorf("path %q", path)
		}
		if tools, _ := body["tools"].([]any); len(tools) != 1 {
			t.Errorf("tools %v", body["tools"])
		}
		if gc, _ := body["generationConfig"].(map[string]any); gc["maxOutputTokens"] != float64(100) {
			t.Errorf("generationConfig %v", body["generationConfig"])
		}
	}, func(_ int, w http.ResponseWriter) {
		part := func(parts ...map[string]any) map[string]any {
			ps := make([]any, len(parts))
			for i, p := range parts {
				ps[i] = p
			}
			return map[string]any{"content": map[string]any{"role": "model", "parts": ps}, "index": 0}
		}
		last := part(map[string]any{"functionCall": map[string]any{"name": "search", "args": map[string]any{"q": "x"}}, "thoughtSignature": "ts-1"})
		last["finishReason"] = "STOP"
		writeSSE(w,
			"data: "+jsonLine(map[string]any{"candidates": []any{part(map[string]any{"text": "Pondering.", "thought": true})}, "modelVersion": "gemini-test-001"}),
			"data: "+jsonLine(map[string]any{"candidates": []any{part(map[string]any{"text": "Hello ", "thoughtSignature": "ts-text"})}}),
			"data: "+jsonLine(map[string]any{"candidates": []any{part(map[string]any{"text": "world"})}}),
			"data: "+jsonLine(map[string]any{"candidates": []any{last},
				"usageMetadata": map[string]any{"promptTokenCount": 9, "candidatesTokenCount": 4, "thoughtsTokenCount": 3, "totalTokenCount": 16}}))
	})
	m := open(t, "gemini:gemini-test", map[string]string{"GEMINI_API_KEY": "g", "GEMINI_BASE_URL": srv.URL})
	r, res, err := collect(t, m, models.Request{
		Body:      map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}},
		Tools:     []models.Tool{{Name: "search"}},
		MaxTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.text != "Hello world" || r.reasoning != "Pondering." {
		t.Errorf("text %q, reasoning %q", r.text, r.reasoning)
	}
	if c := r.calls[0]; c == nil || c.Name != "search" || c.Arguments != `{"q":"x"}` || c.ID == "" {
		t.Errorf("tool call %+v", c)
	}
	if res.FinishReason != "tool_calls" || res.Model != "gemini-test-001" || res.ThoughtSignatures[0] != "ts-1" || res.ProviderFields["thoughtSignature"] != "ts-text" {
		t.Errorf("result %+v", res)
	}
	if u := res.Usage; u == nil || u.InputTokens != 9 || u.OutputTokens != 7 || u.TotalTokens != 16 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// TestGeminiError checks a refused request's error body is read.
func TestGeminiError(t *testing.T) {
	srv := newSSEServer(t, nil, func(_ int, w http.ResponseWriter) {
		writeError(w, 403, `{"error":{"code":403,"message":"Permission denied on resource","status":"PERMISSION_DENIED"}}`)
	})
	m := open(t, "gemini:g", map[string]string{"GEMINI_API_KEY": "g", "GEMINI_BASE_URL": srv.URL})
	_, _, err := collect(t, m, models.Request{Body: map[string]any{"contents": []any{}}})
	var e *models.Error
	if !errors.As(err, &e) || e.Type != models.ErrPermissionDenied || e.Code != "PERMISSION_DENIED" || e.Message != "Permission denied on resource" {
		t.Fatalf("error %v", err)
	}
}
