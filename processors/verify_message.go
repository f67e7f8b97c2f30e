package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// VerifyMessage handles role "verify" messages, the delivery checker's
// cards, which no model accepts: an empty card is dropped; a card carrying
// repair feedback becomes a user message wrapped in
// <delivery_check_feedback>, so the repair run acts on it.
//
// Metadata: verifyMessagesRemoved, verifyFeedbackSurfaced.
type VerifyMessage struct{}

// NewVerifyMessage returns a VerifyMessage processor.
func NewVerifyMessage() *VerifyMessage { return &VerifyMessage{} }

// Name returns "VerifyMessageProcessor".
func (*VerifyMessage) Name() string { return NameVerifyMessage }

// Process drops or surfaces verify cards.
func (*VerifyMessage) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	out, removed, surfaced := surfaceCards(pc.Messages, "verify", func(m enginecore.Message, content string) string {
		return "<delivery_check_feedback>\n" + content + "\n</delivery_check_feedback>"
	})
	next.Messages = out
	next.Metadata["verifyMessagesRemoved"] = float64(removed)
	next.Metadata["verifyFeedbackSurfaced"] = float64(surfaced)
	return next, nil
}

// surfaceCards turns messages of a UI-only role into user messages with
// wrapped content, dropping those whose trimmed content is empty. It
// returns the new list (the input when there is no such message) and the
// number of cards dropped and surfaced.
func surfaceCards(msgs []enginecore.Message, role string, wrap func(m enginecore.Message, content string) string) ([]enginecore.Message, int, int) {
	first := -1
	for i, m := range msgs {
		if m["role"] == role {
			first = i
			break
		}
	}
	if first < 0 {
		return msgs, 0, 0
	}
	out := make([]enginecore.Message, first, len(msgs))
	copy(out, msgs[:first])
	removed, surfaced := 0, 0
	for _, m := range msgs[first:] {
		if m["role"] != role {
			out = append(out, m)
			continue
		}
		content := trimJS(str(m["content"]))
		if content == "" {
			removed++
			continue
		}
		card := maps.Clone(m)
		card["content"] = wrap(m, content)
		card["role"] = "user"
		out = append(out, card)
		surfaced++
	}
	return out, removed, surfaced
}

func (d deps) verifyMessage(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewVerifyMessage())
}
