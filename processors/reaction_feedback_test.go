package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestReactionFeedback(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"a1","role":"assistant","content":"x","metadata":{"reactions":[{"emoji":"👍"},{"emoji":""},{"emoji":"🎉"}]}},
		{"id":"a2","role":"assistant","content":"y","metadata":{"reactions":[{"emoji":"❤️"}]}},
		{"id":"u1","role":"user","content":"thanks"},
		{"id":"a3","role":"assistant","content":"z","metadata":{"reactions":[{"emoji":"👎"}]}},
		{"id":"u2","role":"user","content":[{"type":"text","text":"multimodal"}]},
		{"id":"u3","role":"user","content":"later"}
	]`)
	out := process(t, processors.NewReactionFeedback(processors.ReactionFeedbackConfig{Enabled: true}), msgs)
	if got := out.Messages[2]["content"]; got != "[User Feedback Emoji: 👍 🎉 ❤️]\n\nthanks" {
		t.Fatalf("u1 = %q", got)
	}
	// Reactions pending at a non-text user message are dropped there.
	if out.Messages[5]["content"] != "later" {
		t.Fatalf("u3 = %q", out.Messages[5]["content"])
	}
	assertJSON(t, out.Metadata, `{"reactionFeedbackProcessed":3}`)

	if out := process(t, build(t, processors.NameReactionFeedback, nil), msgs); len(out.Metadata) != 0 {
		t.Fatal("ran while disabled")
	}
}
