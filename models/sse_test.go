package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/convstream/convstream/models"
)

// sseServer answers every request with status and, when it is 200, the
// server-sent events events (each a complete "event:/data:" block without
// its blank line), flushing after each; check sees each request's path
// and body first.
type sseServer struct {
	*httptest.Server
	calls atomic.Int32
}

func newSSEServer(t *testing.T, check func(t *testing.T, path string, body map[string]any), answer func(n int, w http.ResponseWriter)) *sseServer {
	t.Helper()
	s := &sseServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.calls.Add(1))
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body: %v: %s", err, raw)
		}
		if check != nil {
			check(t, r.URL.Path+"?"+r.URL.RawQuery, body)
		}
		answer(n, w)
	}))
	t.Cleanup(s.Close)
	return s
}

// writeSSE writes events as a text/event-stream, flushing after each.
func writeSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "%s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

// writeError writes a JSON error answer.
func writeError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// collect streams req through m and returns the deltas joined.
type reply struct {
	text, reasoning string
	calls           map[int]*models.ToolCallDelta
	deltas          int
}

func collect(t *testing.T, m models.Model, req models.Request) (*reply, *models.Result, error) {
	t.Helper()
	r := &reply{calls: map[int]*models.ToolCallDelta{}}
	res, err := m.Stream(context.Background(), req, func(d models.Delta) error {
		r.deltas++
		r.text += d.Text
		r.reasoning += d.Reasoning
		for _, c := range d.ToolCalls {
			cur := r.calls[c.Index]
			if cur == nil {
				cur = &models.ToolCallDelta{Index: c.Index}
				r.calls[c.Index] = cur
			}
			if c.ID != "" {
				cur.ID = c.ID
			}
			if c.Name != "" {
				cur.Name = c.Name
			}
			cur.Arguments += c.Arguments
		}
		return nil
	})
	return r, res, err
}

func open(t *testing.T, spec string, env map[string]string, opts ...models.Option) models.Model {
	t.Helper()
	opts = append([]models.Option{models.WithGetenv(func(k string) string { return env[k] })}, opts...)
	m, err := models.Open(spec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonLine(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
