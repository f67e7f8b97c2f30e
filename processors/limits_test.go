package processors_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// doublingVariables is the PlaceholderVariablesProcessor config of the
// request of issue 35: a few hundred bytes whose variables double at each
// level, so that "{{vDEPTH}}" expands to 2^depth copies of v0.
func doublingVariables(depth int) map[string]any {
	vars := map[string]any{"v0": "ab"}
	for i := 1; i <= depth; i++ {
		prev := "{{v" + strconv.Itoa(i-1) + "}}"
		vars["v"+strconv.Itoa(i)] = prev + prev
	}
	return map[string]any{"depth": float64(depth), "variableGenerators": vars}
}

// allocatedDuring returns the bytes allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// limitOf returns the limit named by the *LimitError err wraps, failing
// the test when err is not a pipeline failure of processor over a limit.
func limitOf(t *testing.T, err error, processor string) string {
	t.Helper()
	var pe *enginecore.PipelineError
	if !errors.As(err, &pe) || pe.Processor != processor {
		t.Fatalf("error %v is not a PipelineError of %s", err, processor)
	}
	var le *enginecore.LimitError
	if !errors.As(err, &le) || !errors.Is(err, enginecore.ErrLimitExceeded) {
		t.Fatalf("error %v is not a LimitError", err)
	}
	if !strings.Contains(err.Error(), le.Limit) {
		t.Errorf("the message does not name the limit: %v", err)
	}
	return le.Limit
}

// TestPlaceholderDoublingRefused: the depth-24 doubling request of issue
// 35 took 2.2–2.4 GB. Within the default limits it is refused at the
// depth limit; with the depth allowed, at the expansion bytes limit,
// before the text that would exceed it is built. Either way a few MiB are
// allocated, not gigabytes.
func TestPlaceholderDoublingRefused(t *testing.T) {
	p := build(t, processors.NamePlaceholderVariables, doublingVariables(24))
	msgs := []enginecore.Message{{"id": "1", "role": "user", "content": "{{v24}}"}}
	for _, tc := range []struct {
		name   string
		limits enginecore.Limits
		limit  string
	}{
		{"default limits", enginecore.Limits{}, enginecore.LimitMaxExpansionDepth},
		{"depth allowed", enginecore.Limits{MaxExpansionDepth: 24}, enginecore.LimitMaxExpansionBytes},
	} {
		eng := enginecore.New(enginecore.WithProcessors(p), enginecore.WithLimits(tc.limits))
		var err error
		allocated := allocatedDuring(func() { _, err = eng.Process(context.Background(), msgs) })
		if got := limitOf(t, err, processors.NamePlaceholderVariables); got != tc.limit {
			t.Errorf("%s: refused by %s, want %s: %v", tc.name, got, tc.limit, err)
		}
		if allocated > 64<<20 {
			t.Errorf("%s: %d MiB allocated", tc.name, allocated>>20)
		}
		t.Logf("%s: %v; %.1f MiB allocated", tc.name, err, float64(allocated)/(1<<20))
	}

	// Eleven levels (twelve rounds: the last puts v0 in) fit in both limits
	// once the depth allows them.
	p = build(t, processors.NamePlaceholderVariables, doublingVariables(12))
	eng := enginecore.New(enginecore.WithProcessors(p), enginecore.WithLimits(enginecore.Limits{MaxExpansionDepth: 12}))
	res, err := eng.Process(context.Background(), []enginecore.Message{{"role": "user", "content": "{{v11}}"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[0]["content"]; got != strings.Repeat("ab", 1<<11) {
		t.Errorf("12 levels: %d bytes", len(got.(string)))
	}
}

// TestPlaceholderExpansionBudget: the bytes limit counts what the whole
// run adds, over all messages: each message below the limit, together
// above it.
func TestPlaceholderExpansionBudget(t *testing.T) {
	p := build(t, processors.NamePlaceholderVariables, map[string]any{"variableGenerators": map[string]any{"kb": strings.Repeat("x", 1000)}})
	var msgs []enginecore.Message
	for i := range 10 {
		msgs = append(msgs, enginecore.Message{"id": strconv.Itoa(i), "role": "user", "content": "{{kb}}"})
	}
	eng := enginecore.New(enginecore.WithProcessors(p), enginecore.WithLimits(enginecore.Limits{MaxExpansionBytes: 5000}))
	_, err := eng.Process(context.Background(), msgs)
	if limitOf(t, err, processors.NamePlaceholderVariables) != enginecore.LimitMaxExpansionBytes {
		t.Fatal(err)
	}
	// Each run has its own budget: five messages fit, again and again.
	for range 2 {
		if _, err := eng.Process(context.Background(), msgs[:5]); err != nil {
			t.Fatal(err)
		}
	}
	// Text already in a message is not counted, only what is added.
	big := strings.Repeat("y", 100_000)
	if _, err := eng.Process(context.Background(), []enginecore.Message{{"role": "user", "content": big + "{{kb}}"}}); err != nil {
		t.Fatal(err)
	}
}

// TestPlaceholderDepthLimit: a depth configured beyond the limit fails
// only when the text still needs rounds past it.
func TestPlaceholderDepthLimit(t *testing.T) {
	p := build(t, processors.NamePlaceholderVariables, map[string]any{"depth": 24.0, "variableGenerators": map[string]any{
		"a": "{{b}}", "b": "{{c}}", "c": "end"}})
	run := func(depth int, content string) (*enginecore.PipelineResult, error) {
		eng := enginecore.New(enginecore.WithProcessors(p), enginecore.WithLimits(enginecore.Limits{MaxExpansionDepth: depth}))
		return eng.Process(context.Background(), []enginecore.Message{{"role": "user", "content": content}})
	}
	res, err := run(3, "{{a}}")
	if err != nil || res.Messages[0]["content"] != "end" {
		t.Fatalf("3 rounds within a limit of 3: %v %v", res, err)
	}
	_, err = run(2, "{{a}}")
	if limitOf(t, err, processors.NamePlaceholderVariables) != enginecore.LimitMaxExpansionDepth {
		t.Fatal(err)
	}
	if res, err = run(2, "{{c}} {{unknown}}"); err != nil || res.Messages[0]["content"] != "end {{unknown}}" {
		t.Fatalf("one round within a limit of 2: %v %v", res, err)
	}
}

// TestPlaceholderHonoursDeadline: the engine used to look at the deadline
// only between processors, so one processor could run far past it (issue
// 35: answers after 5.9–9.2 s with a timeout of 3 s). Here every message
// calls a generator that takes 20 ms, 200 messages 4 s; the run stops at
// its deadline with an error naming the processor, having called the
// generator a few times, not 200.
func TestPlaceholderHonoursDeadline(t *testing.T) {
	var calls atomic.Int32
	slow := func() (string, error) {
		calls.Add(1)
		time.Sleep(20 * time.Millisecond)
		return "value", nil
	}
	p := build(t, processors.NamePlaceholderVariables, nil, processors.WithVariables(map[string]processors.VariableFunc{"slow": slow}))
	var msgs []enginecore.Message
	for i := range 200 {
		msgs = append(msgs, enginecore.Message{"id": strconv.Itoa(i), "role": "user", "content": "{{slow}}"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := enginecore.New(enginecore.WithProcessors(p)).Process(ctx, msgs)
	var pe *enginecore.PipelineError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Processor != processors.NamePlaceholderVariables {
		t.Fatalf("err = %v, want the deadline inside %s", err, processors.NamePlaceholderVariables)
	}
	if n := calls.Load(); n >= 100 {
		t.Errorf("the generator ran %d times of 200", n)
	}
	t.Logf("%v after %d generator calls", err, calls.Load())
}

// TestLoopsHonourCancel: a processor looping over messages stops when its
// context ends.
func TestLoopsHonourCancel(t *testing.T) {
	msgs := make([]enginecore.Message, 1000)
	for i := range msgs {
		msgs[i] = enginecore.Message{"id": strconv.Itoa(i), "role": "user", "content": "x"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	configs := map[string]map[string]any{processors.NameInputTemplate: {"inputTemplate": "> {{text}}"}}
	for _, name := range []string{processors.NameMessageCleanup, processors.NameInputTemplate, processors.NameTaskMessage, processors.NamePlaceholderVariables,
		processors.NameAgentCouncilFlatten, processors.NameGroupMessageFlatten, processors.NameTasksFlatten, processors.NameToolCall} {
		p := build(t, name, configs[name])
		if _, err := p.Process(ctx, &enginecore.PipelineContext{Messages: msgs, Metadata: map[string]any{}}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestInputTemplateBounded: a template of many {{text}} slots multiplies
// every user message; what it adds is drawn from the run's budget.
func TestInputTemplateBounded(t *testing.T) {
	p := build(t, processors.NameInputTemplate, map[string]any{"inputTemplate": strings.Repeat("{{text}}", 300)})
	msgs := make([]enginecore.Message, 50)
	for i := range msgs {
		msgs[i] = enginecore.Message{"id": strconv.Itoa(i), "role": "user", "content": strings.Repeat("z", 10_000)}
	}
	var err error
	allocated := allocatedDuring(func() { _, err = enginecore.New(enginecore.WithProcessors(p)).Process(context.Background(), msgs) })
	if limitOf(t, err, processors.NameInputTemplate) != enginecore.LimitMaxExpansionBytes {
		t.Fatal(err)
	}
	if allocated > 64<<20 {
		t.Errorf("%d MiB allocated", allocated>>20)
	}
	// The ordinary use is unaffected.
	p = build(t, processors.NameInputTemplate, map[string]any{"inputTemplate": "Q: {{text}}"})
	res, err := enginecore.New(enginecore.WithProcessors(p)).Process(context.Background(), msgs)
	if err != nil || res.Messages[0]["content"] != "Q: "+strings.Repeat("z", 10_000) {
		t.Fatalf("%v", err)
	}
}

// TestTaskMessageBounded: "$`" in a task's content stands for the text
// before the slot, so a template of many slots grows with the square of
// its size.
func TestTaskMessageBounded(t *testing.T) {
	p := build(t, processors.NameTaskMessage, map[string]any{"template": strings.Repeat("x", 1000) + strings.Repeat("{{content}}", 100)})
	msgs := []enginecore.Message{{"id": "1", "role": "task", "content": strings.Repeat("$`", 1000),
		"metadata": map[string]any{"instruction": "go"}}}
	var err error
	allocated := allocatedDuring(func() { _, err = enginecore.New(enginecore.WithProcessors(p)).Process(context.Background(), msgs) })
	if limitOf(t, err, processors.NameTaskMessage) != enginecore.LimitMaxExpansionBytes {
		t.Fatal(err)
	}
	if allocated > 64<<20 {
		t.Errorf("%d MiB allocated", allocated>>20)
	}
}

// TestSanitizeToolArgumentsDeep: a megabyte of "[" in a tool call's
// arguments overflowed the goroutine stack of the recursive parser, a
// fatal error that no recover catches and that killed the worker. Past
// encoding/json's nesting limit the arguments are malformed; below it
// they are completed as before.
func TestSanitizeToolArgumentsDeep(t *testing.T) {
	for _, deep := range []string{strings.Repeat("[", 1<<20), strings.Repeat(`{"a":`, 1<<18)} {
		if got := processors.SanitizeToolArguments(deep); got != "{}" {
			t.Errorf("%.10s… (%d bytes): %.20q", deep, len(deep), got)
		}
	}
	if got := processors.SanitizeToolArguments(strings.Repeat("[", 5000)); got != strings.Repeat("[", 5000)+strings.Repeat("]", 5000) {
		t.Errorf("5,000 levels: %.20q", got)
	}
	p := build(t, processors.NameToolCall, nil)
	msgs := []enginecore.Message{{"id": "1", "role": "assistant", "content": "", "tools": []any{
		map[string]any{"id": "c1", "identifier": "t", "apiName": "f", "type": "default", "arguments": strings.Repeat("[", 1<<20)}}}}
	out := process(t, p, msgs)
	if got := dig(out.Messages[0], "tool_calls"); got == nil {
		t.Errorf("no tool calls: %v", out.Messages[0])
	}
}

// TestSpecLimits: a spec's limits tighten the engine's, never loosen them.
func TestSpecLimits(t *testing.T) {
	spec, err := processors.ParseSpec([]byte("name: s\nprocessors: [MessageCleanupProcessor]\nlimits:\n  maxExpansionBytes: 1024\n  maxExpansionDepth: 20\n"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := processors.Default().Build(spec, enginecore.WithLimits(enginecore.Limits{MaxExpansionBytes: 1 << 20, MaxExpansionDepth: 4}))
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Limits(); got != (enginecore.Limits{MaxExpansionBytes: 1024, MaxExpansionDepth: 4}) {
		t.Errorf("limits = %+v", got)
	}
	for doc, want := range map[string]string{
		"limits: {maxExpansionBytes: -1}":   "limits.maxExpansionBytes: must be a positive integer",
		"limits: {maxExpansionDepth: x}":    "limits.maxExpansionDepth: must be an integer, got string",
		"limits: {maxExpansionDeep: 3}":     "limits.maxExpansionDeep: unknown field",
		"limits: 3":                         "limits: must be an object, got number",
		"limits: {maxExpansionBytes: 1.5}":  "limits.maxExpansionBytes: must be an integer, got number",
		"limits: {maxExpansionDepth: 0}":    "limits.maxExpansionDepth: must be a positive integer",
		"limits: {maxExpansionBytes: 4096}": "",
	} {
		_, err := processors.ParseSpec([]byte("processors: [MessageCleanupProcessor]\n" + doc))
		if (want == "" && err != nil) || (want != "" && (err == nil || err.Error() != want || !errors.Is(err, processors.ErrInvalidSpec))) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// BenchmarkPlaceholderDoublingRefused is the processor's part of the
// request of issue 35 (BenchmarkInferenceDoublingRefused in cmd/worker is
// the whole request): the depth-24 doubling variables refused by the depth
// limit (default limits) or, with the depth allowed, by the expansion
// bytes limit after the rounds that fit in 4 MiB.
func BenchmarkPlaceholderDoublingRefused(b *testing.B) {
	p, err := processors.Default().New(processors.NamePlaceholderVariables, doublingVariables(24))
	if err != nil {
		b.Fatal(err)
	}
	msgs := []enginecore.Message{{"id": "1", "role": "user", "content": "{{v24}}"}}
	for _, bc := range []struct {
		name   string
		limits enginecore.Limits
	}{{"default-limits", enginecore.Limits{}}, {"depth-30", enginecore.Limits{MaxExpansionDepth: 30}}} {
		b.Run(bc.name, func(b *testing.B) {
			eng := enginecore.New(enginecore.WithProcessors(p), enginecore.WithLimits(bc.limits))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Process(context.Background(), msgs); !errors.Is(err, enginecore.ErrLimitExceeded) {
					b.Fatal(err)
				}
			}
		})
	}
}
