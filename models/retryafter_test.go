package models_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/convstream/convstream/models"
)

// TestRetryAfter checks that a provider's Retry-After is honoured within
// the bound: a 429 asking for one second is retried after at least that
// second (the backoff alone would wait milliseconds), and one asking for
// longer than MaxRetryAfter, or than the call's context has left, fails
// at once with the refusal and the wait asked, from each provider's
// client.
func TestRetryAfter(t *testing.T) {
	retry := models.WithRetry(models.Retry{Retries: 3, Delay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxRetryAfter: 5 * time.Second})
	const rateLimited = `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`

	t.Run("waited out", func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		srv := newSSEServer(t, nil, func(n int, w http.ResponseWriter) {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				writeError(w, 429, rateLimited)
				return
			}
			writeSSE(w, openAIChunk(map[string]any{"content": "ok"}, "stop"), "data: [DONE]")
		})
		m := open(t, "openai:m", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL}, retry)
		r, _, err := collect(t, m, models.Request{Body: map[string]any{"messages": []any{}}})
		if err != nil || r.text != "ok" {
			t.Fatalf("reply %q, error %v", r.text, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(at) != 2 {
			t.Fatalf("%d calls, want 2", len(at))
		}
		if gap := at[1].Sub(at[0]); gap < time.Second {
			t.Errorf("retried after %v, want at least the Retry-After of 1s", gap)
		}
	})

	for _, tc := range []struct {
		provider, spec, key, body string
		status                    int
	}{
		{"openai", "openai:m", "OPENAI", rateLimited, 429},
		{"anthropic", "anthropic:c", "ANTHROPIC", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, 429},
		{"gemini", "gemini:g", "GEMINI", `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`, 503},
	} {
		t.Run("too long/"+tc.provider, func(t *testing.T) {
			srv := newSSEServer(t, nil, func(_ int, w http.ResponseWriter) {
				w.Header().Set("Retry-After", "120")
				writeError(w, tc.status, tc.body)
			})
			m := open(t, tc.spec, map[string]string{tc.key + "_API_KEY": "k", tc.key + "_BASE_URL": srv.URL}, retry)
			_, _, err := collect(t, m, models.Request{Body: map[string]any{"max_tokens": 10, "messages": []any{}, "contents": []any{}}})
			var e *models.Error
			if !errors.As(err, &e) || e.Status != tc.status || e.RetryAfter != 120*time.Second {
				t.Fatalf("error %v (%+v), want a %d asking 120s", err, e, tc.status)
			}
			if n := srv.calls.Load(); n != 1 {
				t.Errorf("%d calls, want 1: a Retry-After over MaxRetryAfter is not waited out", n)
			}
		})
	}

	t.Run("past the deadline", func(t *testing.T) {
		srv := newSSEServer(t, nil, func(_ int, w http.ResponseWriter) {
			w.Header().Set("Retry-After-Ms", "4000")
			writeError(w, 429, rateLimited)
		})
		m := open(t, "openai:m", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL}, retry)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := m.Stream(ctx, models.Request{Body: map[string]any{"messages": []any{}}}, func(models.Delta) error { return nil })
		var e *models.Error
		if !errors.As(err, &e) || e.Type != models.ErrQuotaLimitReached || e.RetryAfter != 4*time.Second {
			t.Fatalf("error %v, want the 429 asking 4s", err)
		}
		if n := srv.calls.Load(); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
}
