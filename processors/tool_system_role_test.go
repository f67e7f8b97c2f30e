package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestToolSystemRoleProvider(t *testing.T) {
	manifests := []processors.ToolManifest{
		{Identifier: "calc", Meta: processors.ToolMeta{Title: "Calculator"}, SystemRole: "Use it for maths.", API: []processors.ToolAPI{{Name: "add"}}},
		{Identifier: "web", Meta: processors.ToolMeta{Description: "Searches the web"}, API: []processors.ToolAPI{{Name: "search"}}},
		{Identifier: "bare", API: []processors.ToolAPI{{Name: "x"}}},
		{Identifier: "empty"}, // no API, no instructions: left out
	}
	cfg := processors.ToolSystemRoleConfig{Manifests: manifests, CanUseFunctionCalling: processors.Supported}
	out := process(t, processors.NewToolSystemRoleProvider(cfg), parseMessages(t, `[{"id":"s","role":"system","content":"Sys"}]`))
	want := "Sys\n\n<tools description=\"The tools you can use below\">\n" +
		"<tool name=\"Calculator\">\n<tool.instructions>Use it for maths.</tool.instructions>\n</tool>\n" +
		"<tool name=\"web\">Searches the web</tool>\n" +
		"<tool name=\"bare\">no description</tool>\n</tools>"
	if got := out.Messages[0]["content"]; got != want {
		t.Fatalf("content = %q", got)
	}
	assertJSON(t, out.Metadata, `{"toolSystemRole":{"contentLength":229,"injected":true,"supportsFunctionCall":true,"toolsCount":4}}`)

	cfg.CanUseFunctionCalling = nil // unknown capability: no tools
	if out := process(t, processors.NewToolSystemRoleProvider(cfg), nil); len(out.Messages) != 0 {
		t.Fatal("injected without function calling")
	}

	// Built from a spec: the default capability allows tools, and manifest
	// fields the pipeline does not use are ignored.
	p := build(t, processors.NameToolSystemRole, map[string]any{
		"manifests": []any{map[string]any{"identifier": "calc", "author": "me", "api": []any{map[string]any{"name": "add", "description": "d", "url": "u"}}}},
	})
	if out := process(t, p, nil); len(out.Messages) != 1 {
		t.Fatal("spec-built provider did not inject")
	}
	configError(t, processors.NameToolSystemRole, map[string]any{"manifests": []any{map[string]any{"identifier": 3.0}}})
}
