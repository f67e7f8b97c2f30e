package processors_test

import (
	"strings"
	"testing"

	"github.com/convstream/convstream/processors"
)

// groupPrompt is the upstream snapshot text with the given values filled in.
func groupPrompt(name, role, title, id, description, members string) string {
	return "<group_context>\nYou are \"" + name + "\", acting as a " + role + " in the multi-agent group \"" + title + "\".\n" +
		"Your internal agent ID is " + id + " (for system use only, never expose to users).\n\n" +
		"<group_description>The following describes the purpose and goals of this agent group:\n\n" + description + "\n</group_description>\n\n" +
		"<group_participants>The following agents are available in this group:\n\n" + members + "\n</group_participants>\n\n" +
		"<identity_rules>\n- NEVER expose or display agent IDs to users - always refer to agents by their names\n</identity_rules>\n</group_context>"
}

// TestGroupContextInjector ports the upstream GroupContextInjector suite,
// its snapshots included; each case names the upstream test it comes from.
func TestGroupContextInjector(t *testing.T) {
	writingTeam := processors.GroupContextConfig{
		CurrentAgentID: "agt_editor", CurrentAgentName: "Editor", CurrentAgentRole: "participant", Enabled: true,
		GroupTitle: "Writing Team", SystemPrompt: "A team for collaborative writing",
		Members: []processors.GroupMember{
			{ID: "agt_supervisor", Name: "Supervisor", Role: "supervisor"},
			{ID: "agt_writer", Name: "Writer", Role: "participant"},
			{ID: "agt_editor", Name: "Editor", Role: "participant"},
		},
	}
	cases := []struct {
		upstream string
		cfg      processors.GroupContextConfig
		in       string
		ids      []any // roles of the output, in order
		injected string
		has      []string
		meta     any
	}{{
		upstream: "should inject group context before first user message",
		cfg:      writingTeam,
		in:       `[{"role":"system","content":"You are a helpful editor."},{"role":"user","content":"Please review this."}]`,
		ids:      []any{"You are a helpful editor.", nil, "Please review this."},
		has: []string{`You are "Editor"`, "acting as a participant", `"Writing Team"`, "agt_editor", "<group_context>", "A team for collaborative writing",
			"<group_participants>", `<member name="Supervisor" id="agt_supervisor" />`, `<member name="Writer" id="agt_writer" />`,
			`<member name="Editor" id="agt_editor" you="true" />`, "<identity_rules>", "NEVER expose or display agent IDs"},
		meta: true,
	}, {
		upstream: "should skip injection when disabled",
		cfg:      processors.GroupContextConfig{CurrentAgentID: "agt_editor", CurrentAgentName: "Editor"},
		in:       `[{"role":"system","content":"You are a helpful editor."},{"role":"user","content":"Hello"}]`,
		ids:      []any{"You are a helpful editor.", "Hello"},
	}, {
		upstream: "should skip injection when no user message exists",
		cfg:      processors.GroupContextConfig{CurrentAgentID: "agt_editor", CurrentAgentName: "Editor", Enabled: true},
		in:       `[{"role":"system","content":"You are a helpful editor."}]`,
		ids:      []any{"You are a helpful editor."},
		meta:     true,
	}, {
		upstream: "should handle config with only identity info",
		cfg:      processors.GroupContextConfig{CurrentAgentID: "agt_editor", CurrentAgentName: "Editor", CurrentAgentRole: "participant", Enabled: true},
		in:       `[{"content":"You are an editor.","role":"system"},{"content":"Hello","role":"user"}]`,
		ids:      []any{"You are an editor.", nil, "Hello"},
		injected: groupPrompt("Editor", "participant", "", "agt_editor", "", ""),
		meta:     true,
	}, {
		upstream: "should handle config with only group info",
		cfg: processors.GroupContextConfig{Enabled: true, GroupTitle: "Test Group", SystemPrompt: "Test group description",
			Members: []processors.GroupMember{{ID: "agt_1", Name: "Agent 1", Role: "participant"}}},
		in:       `[{"content":"System prompt.","role":"system"},{"content":"Hello","role":"user"}]`,
		ids:      []any{"System prompt.", nil, "Hello"},
		injected: groupPrompt("", "", "Test Group", "", "Test group description", `  <member name="Agent 1" id="agt_1" />`),
		meta:     true,
	}, {
		upstream: "should handle empty config (and should always include identity rules)",
		cfg:      processors.GroupContextConfig{Enabled: true},
		in:       `[{"content":"Base prompt.","role":"system"},{"content":"Hello","role":"user"}]`,
		ids:      []any{"Base prompt.", nil, "Hello"},
		injected: groupPrompt("", "", "", "", "", ""),
		meta:     true,
	}, {
		upstream: "should handle empty members array",
		cfg:      processors.GroupContextConfig{Enabled: true, GroupTitle: "Empty Group", Members: []processors.GroupMember{}, SystemPrompt: "Empty group description"},
		in:       `[{"content":"Prompt.","role":"system"},{"content":"Hello","role":"user"}]`,
		ids:      []any{"Prompt.", nil, "Hello"},
		injected: groupPrompt("", "", "Empty Group", "", "Empty group description", ""),
		meta:     true,
	}, {
		upstream: "should preserve other messages unchanged",
		cfg:      processors.GroupContextConfig{CurrentAgentID: "agt_1", CurrentAgentName: "Agent 1", Enabled: true, GroupTitle: "Test Group"},
		in:       `[{"role":"system","content":"System prompt."},{"role":"user","content":"User message."},{"role":"assistant","content":"Assistant response."}]`,
		ids:      []any{"System prompt.", nil, "User message.", "Assistant response."},
		has:      []string{"<group_context>"},
		meta:     true,
	}}
	for _, tc := range cases {
		t.Run(tc.upstream, func(t *testing.T) {
			out := process(t, processors.NewGroupContextInjector(tc.cfg), parseMessages(t, tc.in))
			if len(out.Messages) != len(tc.ids) {
				t.Fatalf("%d messages: %v", len(out.Messages), out.Messages)
			}
			for i, want := range tc.ids {
				if want == nil {
					if out.Messages[i]["role"] != "user" {
						t.Fatalf("message %d is not the injection: %v", i, out.Messages[i])
					}
					got := content(out.Messages[i])
					if tc.injected != "" && got != tc.injected {
						t.Fatalf("injected:\n%s\nwant:\n%s", got, tc.injected)
					}
					for _, s := range tc.has {
						if !strings.Contains(got, s) {
							t.Errorf("injection lacks %q", s)
						}
					}
					continue
				}
				if out.Messages[i]["content"] != want {
					t.Fatalf("message %d = %v, want %v", i, out.Messages[i]["content"], want)
				}
			}
			if got := out.Metadata["groupContextInjected"]; got != tc.meta {
				t.Fatalf("groupContextInjected = %v, want %v", got, tc.meta)
			}
		})
	}
}

// TestGroupContextInjectorShares: the block joins the injection message
// KnowledgeInjector and UserMemoryInjector write, as a paragraph of its own.
func TestGroupContextInjectorShares(t *testing.T) {
	p := build(t, processors.NameGroupContextInjector, map[string]any{"enabled": true, "groupTitle": "G",
		"members": []any{map[string]any{"id": "a", "name": "A", "role": "participant"}}})
	out := process(t, p, parseMessages(t, `[{"role":"user","content":"earlier","meta":{"systemInjection":true}},{"role":"user","content":"Hi"}]`))
	if len(out.Messages) != 2 || !strings.HasPrefix(content(out.Messages[0]), "earlier\n\n<group_context>\n") {
		t.Fatalf("messages %v", out.Messages)
	}
}
