package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLogDurations: the JSON log writes durations as Go prints them.
func TestLogDurations(t *testing.T) {
	var out strings.Builder
	log, err := newLogger(&options{logLevel: "info", logFormat: "json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("x", "took", 1500*time.Millisecond, "group", slog.GroupValue(slog.Duration("wait", 250*time.Millisecond)))
	if s := out.String(); !strings.Contains(s, `"took":"1.5s"`) || !strings.Contains(s, `"wait":"250ms"`) {
		t.Errorf("log line %s", s)
	}
}
