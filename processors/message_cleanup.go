package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// MessageCleanup is the final step: it strips every message down to the
// fields an OpenAI-style API accepts. System and user messages keep
// content and role; assistant messages also tool_calls and reasoning; tool
// messages also tool_call_id and name. Messages of other roles are kept as
// they are.
//
// Metadata: messageCleanup {cleanedCount, totalMessages}.
type MessageCleanup struct{}

// NewMessageCleanup returns a MessageCleanup processor.
func NewMessageCleanup() *MessageCleanup { return &MessageCleanup{} }

// Name returns "MessageCleanupProcessor".
func (*MessageCleanup) Name() string { return NameMessageCleanup }

// Process cleans the messages.
func (*MessageCleanup) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	var err error
	next.Messages, n, err = mapMessages(ctx, pc.Messages, cleanMessage)
	if err != nil {
		return nil, err
	}
	next.Metadata["messageCleanup"] = map[string]any{
		"cleanedCount":  float64(n),
		"totalMessages": float64(len(next.Messages)),
	}
	return next, nil
}

func cleanMessage(m enginecore.Message) (enginecore.Message, bool) {
	role := m["role"]
	switch role {
	case "system", "user", "assistant", "tool":
	default:
		return m, false
	}
	out := make(enginecore.Message, 4)
	out["role"] = role
	copyField(out, m, "content")
	switch role {
	case "assistant":
		copyTruthy(out, m, "tool_calls")
		copyTruthy(out, m, "reasoning")
	case "tool":
		copyField(out, m, "tool_call_id")
		copyTruthy(out, m, "name")
	}
	return out, true
}

func (d deps) messageCleanup(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewMessageCleanup())
}
