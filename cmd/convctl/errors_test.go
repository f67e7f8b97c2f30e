package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/streams"
)

// TestErrorsPrintsStoredReports requires `convctl errors CONV` to print,
// after the fact, the rejections the worker stored for a conversation: an
// event refused and an inference request refused, one JSON line each, in
// order; a conversation without any prints nothing. Before, rejections
// went out on core NATS only and there was no such verb.
func TestErrorsPrintsStoredReports(t *testing.T) {
	startWorker(t)
	if code, _, errOut := convctl(t, "", "send", "--type", "deleted", "--id", "ghost", "--event-id", "del-ghost", "--wait", "errs"); code != 1 {
		t.Fatalf("send rejected: %d\n%s", code, errOut)
	}
	if code, out, errOut := convctl(t, "", "infer", "--pipeline", "nope", "errs"); code != 1 {
		t.Fatalf("infer unknown pipeline: %d\n%s\n%s", code, out, errOut)
	}
	var out, errOut string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var code int
		code, out, errOut = convctl(t, "", "errors", "errs")
		if code != 0 {
			t.Fatalf("errors: %d\n%s", code, errOut)
		}
		if strings.Count(out, "\n") == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("errors printed %d lines, want 2:\n%s", len(lines), out)
	}
	var first, second storedErrorLine
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first.Type != streams.TypeEventRejected || !strings.Contains(string(first.Data), `"code":"not_found"`) ||
		!strings.Contains(string(first.Data), `"eventId":"del-ghost"`) || first.Sequence == 0 || first.Stored.IsZero() {
		t.Errorf("first line: %s", lines[0])
	}
	if second.Type != streams.TypeEventRejected || !strings.Contains(string(second.Data), `"code":"unknown_pipeline"`) || second.Sequence <= first.Sequence {
		t.Errorf("second line: %s", lines[1])
	}
	if code, out, errOut := convctl(t, "", "errors", "quiet"); code != 0 || out != "" {
		t.Errorf("errors of a quiet conversation: %d %q %s", code, out, errOut)
	}
	if code, _, _ := convctl(t, "", "errors", "bad id"); code != 2 {
		t.Errorf("errors with a bad id: %d, want 2", code)
	}
}
