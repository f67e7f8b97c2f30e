package models_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/models"
)

func fast(tokens int) models.Option {
	return models.WithBuiltin(models.BuiltinConfig{Tokens: tokens, TokensPerChunk: 2, Rate: 0})
}

// TestBuiltin checks the built-in model's reply: deterministic, of the
// length asked, in chunks of the size asked, cut at MaxTokens.
func TestBuiltin(t *testing.T) {
	m := open(t, "builtin", nil, fast(10))
	req := models.Request{Messages: []map[string]any{{"role": "user", "content": "hello"}}}
	a, res, err := collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := collect(t, m, req)
	if a.text != b.text || !strings.HasPrefix(a.text, `You said "hello". `) || !strings.HasSuffix(a.text, ".") {
		t.Errorf("replies %q and %q", a.text, b.text)
	}
	// 3 words of opening and 10 tokens, 2 a chunk.
	if a.deltas != 7 || res.FinishReason != "stop" || res.Usage.OutputTokens != 13 {
		t.Errorf("%d deltas, result %+v usage %+v", a.deltas, res, res.Usage)
	}
	req.MaxTokens = 4
	_, res, _ = collect(t, m, req)
	if res.FinishReason != "length" || res.Usage.OutputTokens != 4 {
		t.Errorf("with MaxTokens 4: %+v %+v", res, res.Usage)
	}
}

// TestBuiltinToolCall checks that offered tools after a user's message
// the built-in model calls the first, and after its result answers in
// text.
func TestBuiltinToolCall(t *testing.T) {
	m := open(t, "builtin", nil, fast(5))
	tools := []models.Tool{{Name: "lookup"}}
	r, res, err := collect(t, m, models.Request{Messages: []map[string]any{{"role": "user", "content": "weather?"}}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.calls[0]; c == nil || c.Name != "lookup" || c.Arguments != `{"input":"weather?"}` || c.ID == "" || r.text != "" {
		t.Errorf("call %+v, text %q", c, r.text)
	}
	if res.FinishReason != "tool_calls" {
		t.Errorf("finish %q", res.FinishReason)
	}
	r, res, _ = collect(t, m, models.Request{Messages: []map[string]any{
		{"role": "user", "content": "weather?"},
		{"role": "assistant", "tool_calls": []any{}},
		{"role": "tool", "tool_call_id": "c", "content": "sunny"},
	}, Tools: tools})
	if len(r.calls) != 0 || !strings.HasPrefix(r.text, `The tool answered "sunny". `) || res.FinishReason != "stop" {
		t.Errorf("after the result: %q, %d calls, %q", r.text, len(r.calls), res.FinishReason)
	}
}

// TestOpenKeys checks where keys come from: the variable or the file its
// _FILE variable names; without one a provider is refused with
// InvalidProviderAPIKey, and a bad spec with a clear error.
func TestOpenKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) models.Option {
		return models.WithGetenv(func(k string) string { return m[k] })
	}
	if _, err := models.Open("anthropic:c", env(map[string]string{"ANTHROPIC_API_KEY_FILE": file})); err != nil {
		t.Errorf("key file: %v", err)
	}
	if _, err := models.Open("openai:local", env(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})); err != nil {
		t.Errorf("a local server without key: %v", err)
	}
	for _, spec := range []string{"openai:m", "anthropic:m", "gemini:m"} {
		_, err := models.Open(spec, env(nil))
		var e *models.Error
		if !errors.As(err, &e) || e.Type != models.ErrInvalidAPIKey {
			t.Errorf("%s without key: %v", spec, err)
		}
	}
	_, err := models.Open("openai:m", env(map[string]string{"OPENAI_API_KEY_FILE": filepath.Join(t.TempDir(), "none")}))
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY_FILE") {
		t.Errorf("missing key file: %v", err)
	}
	for _, spec := range []string{"", "gpt-4", "openai:", "mistral:large"} {
		if _, err := models.Open(spec, env(nil)); err == nil {
			t.Errorf("%q: no error", spec)
		}
	}
}
