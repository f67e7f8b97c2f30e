package processors_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

var (
	credsSystemRole = strings.Repeat("lobe-creds instructions: manage credentials carefully.\n", 20)
	skillContent    = strings.Repeat("# PowerShell Skill\n\nRun PowerShell commands safely.\n", 20)
	resourceTree    = "<resources skill=\"PowerShell\">\n- scripts/run.ps1\n</resources>"
	credsManifest   = processors.InjectedManifest{Identifier: "lobe-creds"}
	powershellSkill = processors.InjectedSkill{Identifier: "powershell", Name: "PowerShell", Content: skillContent}
)

// activationMessage builds a tool message with the given plugin and
// state; content "" means the default of the API.
func activationMessage(api, identifier, content string, state map[string]any) enginecore.Message {
	if content == "" {
		content = skillContent + "\n\n" + resourceTree
		if api == "activateTools" {
			content = "Successfully activated tools:\n\n## Creds (lobe-creds)\n" + credsSystemRole +
				"\n\nAvailable APIs:\n- **listCreds**: List credentials\n- **createCred**: Create a credential"
		}
	}
	// Round-trip through JSON so the state has the shapes decoded events have.
	var st map[string]any
	b, _ := json.Marshal(state)
	_ = json.Unmarshal(b, &st)
	return enginecore.Message{
		"content": content, "id": "tool-1", "role": "tool", "tool_call_id": "call-1",
		"plugin":      map[string]any{"apiName": api, "identifier": identifier},
		"pluginState": st,
	}
}

var credsActivated = []any{map[string]any{"apiCount": 2, "identifier": "lobe-creds", "name": "Creds"}}

// TestActivationResultTrim ports the upstream ActivationResultTrimProcessor
// suite; each case names the upstream test it comes from.
func TestActivationResultTrim(t *testing.T) {
	cases := []struct {
		upstream string
		cfg      processors.ActivationResultTrimConfig
		msg      enginecore.Message
		keep     bool     // content unchanged
		has      []string // substrings of the new content
		hasNot   []string
		exact    string
	}{{
		upstream: "should trim the result to a short confirmation when the manifest is injected",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}},
		msg:      activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedSkills": []any{}, "activatedTools": credsActivated, "alreadyActive": []any{}, "notFound": []any{}}),
		has:      []string{"Creds (lobe-creds, 2 APIs)", "available in the system prompt"},
		hasNot:   []string{credsSystemRole},
	}, {
		upstream: "should keep already-active and not-found details in the confirmation",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}},
		msg:      activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedTools": credsActivated, "alreadyActive": []any{"github"}, "notFound": []any{"nonexistent"}}),
		has:      []string{"Already active: github.", "Not found: nonexistent."},
	}, {
		upstream: "should NOT trim when an activated tool is not injected into the system prompt",
		cfg:      processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedTools": credsActivated}),
		keep:     true,
	}, {
		upstream: "should NOT trim when a fallback-activated skill is not injected",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}},
		msg:      activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedSkills": []any{map[string]any{"name": "agent-browser"}}, "activatedTools": credsActivated}),
		keep:     true,
	}, {
		upstream: "should trim fallback-activated skills when they are injected too",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}, InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedSkills": []any{map[string]any{"name": "PowerShell"}}, "activatedTools": credsActivated}),
		has:      []string{"Activated skills: PowerShell."},
		hasNot:   []string{credsSystemRole},
	}, {
		upstream: "should leave pure already-active results untouched",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}},
		msg:      activationMessage("activateTools", "lobe-activator", "Already active: lobe-creds", map[string]any{"activatedTools": []any{}, "alreadyActive": []any{"lobe-creds"}}),
		keep:     true,
	}, {
		upstream: "should trim the result and keep the non-injected suffix (resource tree)",
		cfg:      processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      activationMessage("activateSkill", "lobe-skills", "", map[string]any{"hasResources": true, "name": "PowerShell", "source": "user"}),
		has:      []string{`Skill "PowerShell" activated`, resourceTree},
		hasNot:   []string{skillContent},
	}, {
		upstream: "should match skills case-insensitively by name",
		cfg:      processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      activationMessage("activateSkill", "lobe-skills", "", map[string]any{"name": "powershell", "source": "builtin"}),
		hasNot:   []string{skillContent},
	}, {
		upstream: "should fully replace a stale result whose content no longer matches",
		cfg:      processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      activationMessage("activateSkill", "lobe-skills", "old skill body v1", map[string]any{"name": "PowerShell"}),
		exact:    `Skill "PowerShell" activated. Its full instructions are available in the system prompt.`,
	}, {
		upstream: "should NOT trim a dynamically activated skill that is not injected",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}},
		msg:      activationMessage("activateSkill", "lobe-skills", "", map[string]any{"name": "PowerShell"}),
		keep:     true,
	}, {
		upstream: "should handle activator-issued activateSkill results",
		cfg:      processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      activationMessage("activateSkill", "lobe-activator", "", map[string]any{"name": "PowerShell"}),
		hasNot:   []string{skillContent},
	}, {
		upstream: "should ignore non-tool messages and other tool results",
		cfg:      processors.ActivationResultTrimConfig{InjectedManifests: []processors.InjectedManifest{credsManifest}, InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      enginecore.Message{"content": "some other tool output", "id": "t1", "role": "tool", "plugin": map[string]any{"apiName": "listCreds", "identifier": "lobe-creds"}},
		keep:     true,
	}, {
		upstream: "should ignore non-tool messages and other tool results",
		cfg:      processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}},
		msg:      enginecore.Message{"content": skillContent, "id": "u1", "role": "user"},
		keep:     true,
	}}
	for _, tc := range cases {
		t.Run(tc.upstream, func(t *testing.T) {
			out := process(t, processors.NewActivationResultTrim(tc.cfg), []enginecore.Message{tc.msg})
			got, _ := out.Messages[0]["content"].(string)
			switch {
			case tc.keep:
				if got != tc.msg["content"] {
					t.Fatalf("trimmed to %q", got)
				}
				return
			case tc.exact != "" && got != tc.exact:
				t.Fatalf("content %q, want %q", got, tc.exact)
			}
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("content %q lacks %q", got, s)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(got, s) {
					t.Errorf("content still holds %.40q...", s)
				}
			}
			meta := out.Metadata["activationResultTrim"].(map[string]any)
			saved := float64(len(tc.msg["content"].(string)) - len(got)) // ASCII: bytes are UTF-16 units
			if meta["trimmedMessages"] != 1.0 || meta["savedChars"] != saved {
				t.Errorf("metadata %v", meta)
			}
		})
	}
}

// TestActivationResultTrimSkips ports "should skip non-string tool
// content" and "should be a no-op when nothing is injected".
func TestActivationResultTrimSkips(t *testing.T) {
	msg := activationMessage("activateSkill", "lobe-skills", "", map[string]any{"name": "PowerShell"})
	msg["content"] = []any{map[string]any{"text": "part", "type": "text"}}
	out := process(t, processors.NewActivationResultTrim(processors.ActivationResultTrimConfig{InjectedSkills: []processors.InjectedSkill{powershellSkill}}), []enginecore.Message{msg})
	assertJSON(t, out.Messages[0]["content"], `[{"text":"part","type":"text"}]`)

	tools := activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedTools": credsActivated})
	out = process(t, build(t, processors.NameActivationResultTrim, nil), []enginecore.Message{tools})
	if out.Messages[0]["content"] != tools["content"] {
		t.Fatal("trimmed with nothing injected")
	}
	if _, ok := out.Metadata["activationResultTrim"]; ok {
		t.Fatal("metadata written with nothing injected")
	}
}

func TestActivationResultTrimConfig(t *testing.T) {
	// Manifests and skills are foreign records: their other fields are ignored.
	p := build(t, processors.NameActivationResultTrim, map[string]any{
		"injectedManifests": []any{map[string]any{"identifier": "lobe-creds", "systemRole": "x", "api": []any{}}},
	})
	out := process(t, p, []enginecore.Message{activationMessage("activateTools", "lobe-activator", "", map[string]any{"activatedTools": credsActivated})})
	if !strings.HasPrefix(out.Messages[0]["content"].(string), "Successfully activated tools: Creds") {
		t.Fatalf("content %q", out.Messages[0]["content"])
	}
	err := configError(t, processors.NameActivationResultTrim, map[string]any{"injectedSkills": "all"})
	if !errors.Is(err, processors.ErrInvalidConfig) || !strings.Contains(err.Error(), "injectedSkills: must be an array") {
		t.Fatalf("err = %v", err)
	}
}
