package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// TaskCallbackMessage handles role "taskCallback" messages, the cards that
// bring a finished task's handoff back into the conversation that started
// it. An empty card is dropped; otherwise it becomes a user message wrapped
// in <task_result task="IDENTIFIER" status="REASON">, which the creator
// agent reads as the task reporting back.
//
// Metadata: taskCallbackMessagesSurfaced.
type TaskCallbackMessage struct{}

// NewTaskCallbackMessage returns a TaskCallbackMessage processor.
func NewTaskCallbackMessage() *TaskCallbackMessage { return &TaskCallbackMessage{} }

// Name returns "TaskCallbackMessageProcessor".
func (*TaskCallbackMessage) Name() string { return NameTaskCallbackMessage }

// Process drops or surfaces task-callback cards.
func (*TaskCallbackMessage) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	out, _, surfaced := surfaceCards(pc.Messages, "taskCallback", func(m enginecore.Message, content string) string {
		callback := dig(m, "metadata", "taskCallback")
		identifier, reason := "task", "done"
		if v := dig(callback, "identifier"); v != nil {
			identifier = jsString(v)
		}
		if v := dig(callback, "reason"); v != nil {
			reason = jsString(v)
		}
		return `<task_result task="` + identifier + `" status="` + reason + "\">\n" + content + "\n</task_result>"
	})
	next.Messages = out
	next.Metadata["taskCallbackMessagesSurfaced"] = float64(surfaced)
	return next, nil
}

func (d deps) taskCallbackMessage(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewTaskCallbackMessage())
}
