package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestHistorySummaryProvider(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"s","role":"system","content":"Sys"},{"id":"u","role":"user","content":"q"}]`)
	out := process(t, processors.NewHistorySummaryProvider(processors.HistorySummaryConfig{HistorySummary: "Talked about Go 😀"}), msgs)
	want := "<chat_history_summary>\n<docstring>Users may have lots of chat messages, here is the summary of the history:</docstring>\n<summary>Talked about Go 😀</summary>\n</chat_history_summary>"
	if got := out.Messages[0]["content"]; got != "Sys\n\n"+want {
		t.Fatalf("content = %q", got)
	}
	// Lengths count UTF-16 units, as JavaScript does.
	assertJSON(t, out.Metadata, `{"historySummary":{"formattedLength":181,"injected":true,"originalLength":18}}`)

	p := build(t, processors.NameHistorySummary, map[string]any{"historySummary": "S"},
		processors.WithHistorySummaryFormat(func(s string) string { return "## History\n" + s }))
	if got := process(t, p, msgs).Messages[0]["content"]; got != "Sys\n\n## History\nS" {
		t.Fatalf("custom format: %q", got)
	}
	if out := process(t, build(t, processors.NameHistorySummary, nil), msgs); len(out.Metadata) != 0 {
		t.Fatal("empty summary injected")
	}
}
