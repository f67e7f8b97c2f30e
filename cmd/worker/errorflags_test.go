package main

import (
	"io"
	"testing"
	"time"

	"github.com/convstream/convstream/streams/worker"
)

// TestErrorStreamFlags checks the errors stream's limits and the dead-letter
// bound: their defaults, the flags and the environment.
func TestErrorStreamFlags(t *testing.T) {
	o, err := parseFlags(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.errorRetention != worker.DefaultErrorRetention() || o.maxDeliver != worker.DefaultMaxDeliver {
		t.Errorf("defaults: %+v, max deliver %d", o.errorRetention, o.maxDeliver)
	}
	env := map[string]string{"CONVSTREAM_ERRORS_MAX_BYTES": "1GiB", "CONVSTREAM_MAX_DELIVER": "7"}
	o, err = parseFlags([]string{"--errors-max-age=48h", "--errors-max-per-conversation=-1"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := worker.ErrorRetention{MaxAge: 48 * time.Hour, MaxBytes: 1 << 30, MaxPerConversation: -1}
	if o.errorRetention != want || o.maxDeliver != 7 {
		t.Errorf("set: %+v, max deliver %d; want %+v, 7", o.errorRetention, o.maxDeliver, want)
	}
	if err := worker.CheckOptions(worker.WithMaxDeliver(0)); err == nil {
		t.Error("max deliver 0 accepted: events would be retried forever")
	}
}
