package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestUserMemoryInjector(t *testing.T) {
	memories := &processors.UserMemories{
		Persona:     &processors.MemoryPersona{Narrative: "Builds things.", Tagline: "Engineer"},
		Identities:  []processors.MemoryIdentity{{ID: "i1", Type: "professional", Role: "Dev", Description: "Senior dev", CapturedAt: "2025-02-23T23:30:00-05:00"}, {}},
		Contexts:    []processors.MemoryContext{{ID: "c1", Title: "Project", Description: "Writing Go"}},
		Experiences: []processors.MemoryExperience{{ID: "e1", Situation: "Outage", KeyLearning: "Add alerts"}},
		Preferences: []processors.MemoryPreference{{ID: "p1", ConclusionDirectives: "Be concise"}, {ID: "p2"}},
	}
	msgs := parseMessages(t, `[{"id":"u1","role":"user","content":"hello"}]`)
	out := process(t, processors.NewUserMemoryInjector(processors.UserMemoryConfig{Memories: memories, Clock: fixedClock}), msgs)
	want := "<user_memory>\n<instruction>The following are memories about this user retrieved from previous conversations. Use this information to personalize your responses and maintain continuity.</instruction>\n" +
		"<persona tagline=\"Engineer\">\nBuilds things.\n</persona>\n" +
		"<identities count=\"1\">\n  <identity type=\"professional\" role=\"Dev\" id=\"i1\" capturedAt=\"2025-02-24\">Senior dev</identity>\n</identities>\n" +
		"<contexts count=\"1\">\n  <context id=\"c1\" title=\"Project\">Writing Go</context>\n</contexts>\n" +
		"<experiences count=\"1\">\n  <experience id=\"e1\">\n    <situation>Outage</situation>\n    <key_learning>Add alerts</key_learning>\n  </experience>\n</experiences>\n" +
		"<preferences count=\"1\">\n  <preference id=\"p1\">Be concise</preference>\n</preferences>\n</user_memory>"
	if len(out.Messages) != 2 || out.Messages[0]["content"] != want {
		t.Fatalf("got %q", out.Messages[0]["content"])
	}

	// Disabled or empty: nothing injected, yet the metadata flag is set as
	// the reference does whenever memories are configured.
	off := false
	out = process(t, processors.NewUserMemoryInjector(processors.UserMemoryConfig{Memories: memories, Enabled: &off}), msgs)
	if len(out.Messages) != 1 || out.Metadata["userMemoryInjected"] != true {
		t.Fatalf("disabled: %v %v", out.Messages, out.Metadata)
	}
	out = process(t, processors.NewUserMemoryInjector(processors.UserMemoryConfig{}), msgs)
	if len(out.Messages) != 1 || len(out.Metadata) != 0 {
		t.Fatal("no memories injected something")
	}

	// From a spec, with unknown memory fields ignored and a bad date dropped.
	p := build(t, processors.NameUserMemoryInjector, map[string]any{"memories": map[string]any{
		"identities": []any{map[string]any{"id": "x", "capturedAt": "not a date", "embedding": []any{1.0}}},
	}})
	out = process(t, p, msgs)
	if got := out.Messages[0]["content"].(string); !contains(got, `<identity id="x" capturedAt="">`) {
		t.Fatalf("got %q", got)
	}
}
