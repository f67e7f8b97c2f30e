package processors_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

func TestParseSpecYAMLAndJSON(t *testing.T) {
	yamlSpec := `
name: mine
processors:
  - name: HistoryTruncateProcessor
    config:
      enableHistoryCount: true
      historyCount: 2
  - MessageCleanupProcessor
`
	jsonSpec := `{"name":"mine","processors":[{"name":"HistoryTruncateProcessor","config":{"enableHistoryCount":true,"historyCount":2}},"MessageCleanupProcessor"]}`
	for _, src := range []string{yamlSpec, jsonSpec} {
		s, err := processors.ParseSpec([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		assertJSON(t, s, `{"name":"mine","processors":[
			{"name":"HistoryTruncateProcessor","config":{"enableHistoryCount":true,"historyCount":2}},
			{"name":"MessageCleanupProcessor"}]}`)
		e, err := processors.Default().Build(s)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Process(context.Background(), parseMessages(t, `[{"id":"1","role":"user","content":"a"},{"id":"2","role":"user","content":"b","x":1},{"id":"3","role":"user","content":"c"}]`))
		if err != nil {
			t.Fatal(err)
		}
		assertJSON(t, res.Messages, `[{"role":"user","content":"b"},{"role":"user","content":"c"}]`)
	}
}

func TestSpecErrorsArePlaced(t *testing.T) {
	_, err := processors.ParseSpec([]byte(`
processors:
  - name: A
    configs: {}
  - 42
  - {config: []}
extra: true
`))
	for _, want := range []string{
		"processors[0].configs: unknown field",
		"processors[1]: must be a name or an object, got number",
		"processors[2].config: must be an object, got array",
		"processors[2].name: missing",
		"extra: unknown field",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if !errors.Is(err, processors.ErrInvalidSpec) {
		t.Error("not ErrInvalidSpec")
	}
	if _, err := processors.ParseSpec([]byte("name: x")); err == nil || !strings.Contains(err.Error(), "processors: missing") {
		t.Errorf("missing processors: %v", err)
	}
	if _, err := processors.ParseSpec([]byte("processors: [")); !errors.Is(err, processors.ErrInvalidSpec) {
		t.Errorf("bad YAML: %v", err)
	}

	spec, err := processors.ParseSpec([]byte(`
processors:
  - SystemRoleInjector
  - name: NoSuchProcessor
  - name: HistoryTruncateProcessor
    config: {historyCount: many, enableHistory: true}
  - name: UserMemoryInjector
    config: {memories: {identities: [{description: 3}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = processors.Default().Build(spec)
	for _, want := range []string{
		`processors[1].name: unknown processor "NoSuchProcessor"`,
		"processors[2].config.historyCount: must be an integer, got string",
		"processors[2].config.enableHistory: unknown field",
		"processors[3].config.memories.identities[0].description: must be a string, got number",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if !errors.Is(err, processors.ErrUnknownProcessor) || !errors.Is(err, processors.ErrInvalidConfig) || !errors.Is(err, processors.ErrInvalidSpec) {
		t.Errorf("sentinels not matched: %v", err)
	}
	var se *processors.SpecError
	if !errors.As(err, &se) {
		t.Error("no *SpecError")
	}

	dup, _ := processors.ParseSpec([]byte("processors: [ToolMessageReorder, ToolMessageReorder]"))
	if _, err := processors.Default().Build(dup); !errors.Is(err, enginecore.ErrDuplicateProcessor) {
		t.Errorf("duplicates: %v", err)
	}
	empty, _ := processors.ParseSpec([]byte("processors: []"))
	if _, err := processors.Default().Build(empty); !errors.Is(err, enginecore.ErrEmptyPipeline) {
		t.Errorf("empty: %v", err)
	}
}

func TestLoadSpecAndConfigure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte("processors: [SystemRoleInjector, MessageCleanupProcessor]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := processors.LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Configure(processors.NameSystemRoleInjector, map[string]any{"systemRole": "Be kind."}); err != nil {
		t.Fatal(err)
	}
	if err := s.Configure("Nope", nil); !errors.Is(err, processors.ErrUnknownProcessor) {
		t.Fatalf("Configure unknown: %v", err)
	}
	e, err := processors.Default().Build(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Process(context.Background(), parseMessages(t, `[{"id":"1","role":"user","content":"hi"}]`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, res.Messages, `[{"role":"system","content":"Be kind."},{"role":"user","content":"hi"}]`)

	if _, err := processors.LoadSpec(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	r := processors.NewRegistry()
	if len(r.Names()) != 0 {
		t.Fatal("new registry not empty")
	}
	ctor := func(map[string]any) (enginecore.Processor, error) { return processors.NewMessageCleanup(), nil }
	if err := r.Register("clean", ctor); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("clean", ctor); !errors.Is(err, processors.ErrDuplicateName) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := r.Register("", ctor); err == nil {
		t.Fatal("empty name accepted")
	}
	if _, err := r.New("other", nil); !errors.Is(err, processors.ErrUnknownProcessor) {
		t.Fatalf("unknown: %v", err)
	}

	// Default registries are independent values.
	a, b := processors.Default(), processors.Default()
	if err := a.Register("extra", ctor); err != nil {
		t.Fatal(err)
	}
	if len(a.Names()) != len(b.Names())+1 {
		t.Fatal("registries share state")
	}
	if len(b.Names()) != 34 {
		t.Fatalf("%d built-ins: %v", len(b.Names()), b.Names())
	}
}

func TestDefaultSpec(t *testing.T) {
	s := processors.DefaultSpec()
	if s.Name != "default" {
		t.Fatalf("name = %q", s.Name)
	}
	var names []string
	for _, p := range s.Processors {
		names = append(names, p.Name)
	}
	want := []string{
		"HistoryTruncateProcessor", "SystemRoleInjector", "SystemDateProvider", "ModelInfoProvider",
		"ToolSystemRoleProvider", "HistorySummaryProvider", "UserMemoryInjector", "KnowledgeInjector",
		"InputTemplateProcessor", "AgentCouncilFlattenProcessor", "GroupMessageFlattenProcessor",
		"TasksFlattenProcessor", "TaskMessageProcessor", "VerifyMessageProcessor", "TaskCallbackMessageProcessor",
		"SupervisorRoleRestoreProcessor", "CompressedGroupRoleTransformProcessor", "GroupOrchestrationFilterProcessor",
		"GroupRoleTransformProcessor", "PlaceholderVariablesProcessor", "ReactionFeedbackProcessor",
		"MessageContentProcessor", "ToolCallProcessor", "DisabledToolCallFilter", "ToolMessageReorder",
		"MessageCleanupProcessor",
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("order:\n%s\nwant\n%s", strings.Join(names, ","), strings.Join(want, ","))
	}
	// Every call returns a fresh copy.
	s.Processors[0].Name = "changed"
	if processors.DefaultSpec().Processors[0].Name != "HistoryTruncateProcessor" {
		t.Fatal("DefaultSpec shares state")
	}
}

func TestDefaultPipeline(t *testing.T) {
	spec := processors.DefaultSpec()
	if err := spec.Configure(processors.NameSystemRoleInjector, map[string]any{"systemRole": "You are helpful."}); err != nil {
		t.Fatal(err)
	}
	e, err := processors.Default(processors.WithClock(fixedClock)).Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	msgs := parseMessages(t, `[
		{"id":"u1","role":"user","content":"Weather?","createdAt":1},
		{"id":"g1","role":"assistantGroup","parentId":"u1","children":[
			{"id":"c1","content":"","tools":[{"id":"call_1","identifier":"weather","apiName":"get","arguments":"{\"city\":\"Paris\"","type":"builtin",
			  "result":{"id":"r1","content":"Sunny"}}]},
			{"id":"c2","content":"It is sunny.","metadata":{"reactions":[{"emoji":"👍"}]}}]},
		{"id":"v1","role":"verify","content":""},
		{"id":"t1","role":"task","content":"42","metadata":{"instruction":"compute"},"agentName":"Calc"},
		{"id":"u2","role":"user","content":"Thanks"}
	]`)
	res, err := e.Process(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, res.Messages, `[
		{"role":"system","content":"You are helpful.\n\nCurrent date: 2026-11-30 (UTC)"},
		{"role":"user","content":"Weather?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather____get","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","content":"Sunny","tool_call_id":"call_1","name":"weather____get"},
		{"role":"assistant","content":"It is sunny."},
		{"role":"assistant","content":"[Task Result from Calc]\n\n**Task Instruction:**\ncompute\n\n**Task Result:**\n42"},
		{"role":"user","content":"Thanks"}]`)
	if res.Stats.ProcessedCount != 26 || len(res.Stats.ProcessorDurations) != 26 {
		t.Fatalf("stats = %+v", res.Stats)
	}
}
