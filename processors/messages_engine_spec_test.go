package processors_test

import (
	"context"
	"slices"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// TestMessagesEngineSpec checks the built-in messages-engine spec: it
// builds, it is the default spec with the upstream additions where the
// upstream MessagesEngine runs them, and it drops a placeholder the
// default pipeline keeps.
func TestMessagesEngineSpec(t *testing.T) {
	spec, ok := processors.BuiltinSpec("messages-engine")
	if !ok || spec.Name != "messages-engine" {
		t.Fatalf("BuiltinSpec(messages-engine) = %v, %v", spec, ok)
	}
	if d, ok := processors.BuiltinSpec("default"); !ok || d.Name != "default" {
		t.Fatal("BuiltinSpec(default)")
	}
	if _, ok := processors.BuiltinSpec("nope"); ok {
		t.Fatal("unknown spec found")
	}

	var names []string
	for _, p := range spec.Processors {
		names = append(names, p.Name)
	}
	var defaults []string
	for _, p := range processors.DefaultSpec().Processors {
		defaults = append(defaults, p.Name)
	}
	added := map[string]bool{
		processors.NamePlaceholderMessageFilter: true, processors.NamePostFlattenPlaceholderMessageFilter: true,
		processors.NameHistoricalWebSearchResultFilter: true, processors.NameLocalSystemToolSnapshotInjector: true,
		processors.NameContextSelectionsInjector: true, processors.NameGroupContextInjector: true,
		processors.NameActivationResultTrim: true, processors.NameStaleToolResultTrim: true,
	}
	if rest := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return added[n] }); !slices.Equal(rest, defaults) {
		t.Fatalf("without the additions:\n%v\nwant the default order:\n%v", rest, defaults)
	}
	after := func(name, prev string) {
		t.Helper()
		for i, n := range names {
			if n == name && i > 0 && names[i-1] == prev {
				return
			}
		}
		t.Errorf("%s does not follow %s in %v", name, prev, names)
	}
	if names[0] != processors.NamePlaceholderMessageFilter || names[1] != processors.NameHistoryTruncate {
		t.Errorf("placeholder filter not before truncation: %v", names)
	}
	after(processors.NamePostFlattenPlaceholderMessageFilter, processors.NameTaskMessage)
	after(processors.NameGroupContextInjector, processors.NameUserMemoryInjector)
	after(processors.NameKnowledgeInjector, processors.NameGroupContextInjector)
	after(processors.NameContextSelectionsInjector, processors.NameKnowledgeInjector)
	after(processors.NameLocalSystemToolSnapshotInjector, processors.NameContextSelectionsInjector)
	after(processors.NameHistoricalWebSearchResultFilter, processors.NameGroupMessageFlatten)
	after(processors.NameActivationResultTrim, processors.NameGroupRoleTransform)
	after(processors.NameStaleToolResultTrim, processors.NameActivationResultTrim)
	after(processors.NamePlaceholderVariables, processors.NameStaleToolResultTrim)

	msgs := parseMessages(t, `[
		{"id":"u1","role":"user","content":"hi"},
		{"id":"a1","role":"assistant","content":"..."},
		{"id":"u2","role":"user","content":"again"}]`)
	run := func(s *processors.Spec) *enginecore.PipelineResult {
		e, err := processors.Default(processors.WithClock(fixedClock)).Build(s)
		if err != nil {
			t.Fatalf("build %s: %v", s.Name, err)
		}
		res, err := e.Process(context.Background(), msgs)
		if err != nil {
			t.Fatalf("run %s: %v", s.Name, err)
		}
		return res
	}
	if got := run(processors.DefaultSpec()); len(got.Messages) != 4 { // system date + 3
		t.Fatalf("default kept %d messages: %v", len(got.Messages), got.Messages)
	}
	got := run(spec)
	if len(got.Messages) != 3 {
		t.Fatalf("messages-engine kept %d messages: %v", len(got.Messages), got.Messages)
	}
	assertJSON(t, got.Metadata["placeholderMessageFilter"], `{"removedCount":1}`)
}

// TestMessagesEngineOnRecordedInputs runs the messages-engine spec, its
// new processors configured so that they have work to do, over the input
// of each recorded call: nothing may fail, panic or touch the input.
func TestMessagesEngineOnRecordedInputs(t *testing.T) {
	spec := processors.MessagesEngineSpec()
	for name, cfg := range map[string]map[string]any{
		processors.NameStaleToolResultTrim:  {"keepRecentMessages": 2.0, "minTotalToolChars": 0.0, "crawlKeepChars": 10.0, "commandKeepChars": 10.0},
		processors.NameActivationResultTrim: {"injectedManifests": []any{map[string]any{"identifier": "lobe-creds"}}},
		processors.NameGroupContextInjector: {"enabled": true, "groupTitle": "G", "members": []any{map[string]any{"id": "a", "name": "A", "role": "participant"}}},
		processors.NameHistoryTruncate:      {"enableHistoryCount": true, "historyCount": 50.0},
	} {
		if err := spec.Configure(name, cfg); err != nil {
			t.Fatal(err)
		}
	}
	e, err := processors.Default(processors.WithClock(fixedClock)).Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range loadRecords(t) {
		pc := r.context()
		before := snapshot(pc)
		if _, err := e.ProcessContext(context.Background(), pc); err != nil {
			t.Fatalf("line %d: %v", r.line, err)
		}
		if snapshot(pc) != before {
			t.Fatalf("line %d: input modified", r.line)
		}
	}
}
