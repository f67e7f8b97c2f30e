package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestModelInfoProvider(t *testing.T) {
	cases := []struct {
		cfg  processors.ModelInfoConfig
		want any
	}{
		{processors.ModelInfoConfig{DisplayName: "Fable 5", ModelID: "claude-fable-5", KnowledgeCutoff: "2024-06"},
			"Current model: Fable 5 (claude-fable-5)\nModel knowledge cutoff: 2024-06"},
		{processors.ModelInfoConfig{DisplayName: " gpt-4o ", ModelID: "gpt-4o"}, "Current model: gpt-4o"},
		{processors.ModelInfoConfig{KnowledgeCutoff: "2024-06", ModelID: "slug"}, "Model knowledge cutoff: 2024-06"},
		{processors.ModelInfoConfig{ModelID: "slug-only"}, nil},
	}
	for _, c := range cases {
		out := process(t, processors.NewModelInfoProvider(c.cfg), parseMessages(t, `[{"id":"u","role":"user","content":"q"}]`))
		var got any
		if out.Messages[0]["role"] == "system" {
			got = out.Messages[0]["content"]
		}
		if got != c.want {
			t.Errorf("%+v: got %q, want %q", c.cfg, got, c.want)
		}
	}
	out := process(t, build(t, processors.NameModelInfo, map[string]any{"enabled": false, "displayName": "X"}), nil)
	if len(out.Messages) != 0 {
		t.Fatal("disabled provider injected")
	}
}
