package natstest

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestLogger logs to the test when -v is given, and discards otherwise.
func TestLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// FailureLogger logs to the test when -v is given; otherwise it keeps the
// records at Info and above, and the test prints the last limit of them if
// it fails, so that a failure seen only in CI comes with what the workers
// did.
func FailureLogger(t testing.TB, limit int) *slog.Logger {
	if testing.Verbose() {
		return TestLogger(t)
	}
	rec := &recordedLines{max: limit}
	t.Cleanup(func() {
		if t.Failed() {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			t.Logf("the workers' last %d log records:\n%s", len(rec.lines), strings.Join(rec.lines, ""))
		}
	})
	return slog.New(slog.NewTextHandler(rec, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// recordedLines keeps the last max lines written to it.
type recordedLines struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (r *recordedLines) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) == r.max {
		r.lines = append(r.lines[:0], r.lines[1:]...)
	}
	r.lines = append(r.lines, string(p))
	return len(p), nil
}
