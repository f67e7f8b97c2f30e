package processors_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// fixedClock is 2026-11-30T03:12:00Z.
func fixedClock() time.Time { return time.Date(2026, 11, 30, 3, 12, 0, 0, time.UTC) }

// parseMessages decodes a JSON array of messages.
func parseMessages(t *testing.T, s string) []enginecore.Message {
	t.Helper()
	var msgs []enginecore.Message
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		t.Fatalf("bad test messages: %v", err)
	}
	return msgs
}

// process runs p over msgs and fails the test if p modified its input.
func process(t *testing.T, p enginecore.Processor, msgs []enginecore.Message) *enginecore.PipelineContext {
	t.Helper()
	return processContext(t, p, &enginecore.PipelineContext{Messages: msgs, Metadata: map[string]any{}})
}

func processContext(t *testing.T, p enginecore.Processor, pc *enginecore.PipelineContext) *enginecore.PipelineContext {
	t.Helper()
	before := snapshot(pc)
	out, err := p.Process(context.Background(), pc)
	if err != nil {
		t.Fatalf("%s: %v", p.Name(), err)
	}
	if snapshot(pc) != before {
		t.Fatalf("%s modified its input", p.Name())
	}
	return out
}

// assertJSON compares v with the JSON document want, ignoring key order.
func assertJSON(t *testing.T, v any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %v", err)
	}
	if d := diff("", w, normalize(v)); d != "" {
		t.Fatalf("%s\n got: %s\nwant: %s", d, js(normalize(v)), want)
	}
}

// build constructs a built-in processor from a config, as a spec would.
func build(t *testing.T, name string, config map[string]any, opts ...processors.Option) enginecore.Processor {
	t.Helper()
	p, err := processors.Default(append([]processors.Option{processors.WithClock(fixedClock)}, opts...)...).New(name, config)
	if err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	if p.Name() != name {
		t.Fatalf("Name() = %q, want %q", p.Name(), name)
	}
	return p
}

// configError builds name from config and returns the error, failing the
// test when there is none.
func configError(t *testing.T, name string, config map[string]any) error {
	t.Helper()
	_, err := processors.Default().New(name, config)
	if err == nil {
		t.Fatalf("build %s with %v: no error", name, config)
	}
	return err
}

func md5Prefix(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// dig follows object keys through a generic JSON value.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
