package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// TasksFlatten expands role "tasks" and "groupTasks" messages, which
// bundle parallel tasks for display, into one role "task" message per task.
// Each task keeps its own fields and inherits the bundle's parentId,
// threadId, groupId and topicId when it has none. A bundle without tasks is
// dropped.
//
// Metadata: tasksFlattenProcessed, tasksMessagesFlattened,
// taskMessagesCreated.
type TasksFlatten struct{}

// NewTasksFlatten returns a TasksFlatten processor.
func NewTasksFlatten() *TasksFlatten { return &TasksFlatten{} }

// Name returns "TasksFlattenProcessor".
func (*TasksFlatten) Name() string { return NameTasksFlatten }

// Process flattens the task bundles.
func (*TasksFlatten) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var out []enginecore.Message
	bundles, created := 0, 0
	for i, m := range pc.Messages {
		if err := interrupted(ctx, i, len(pc.Messages)); err != nil {
			return nil, err
		}
		role := m["role"]
		tasks, isArray := m["tasks"].([]any)
		if (role != "tasks" && role != "groupTasks") || !truthy(m["tasks"]) {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]enginecore.Message, 0, len(pc.Messages)+4), pc.Messages[:i]...)
		}
		if !isArray || len(tasks) == 0 {
			continue
		}
		bundles++
		for _, t := range tasks {
			task := make(enginecore.Message, len(obj(t))+1)
			maps.Copy(task, obj(t))
			task["role"] = "task"
			for _, k := range [...]string{"parentId", "threadId", "groupId", "topicId"} {
				if !truthy(task[k]) && truthy(m[k]) {
					task[k] = m[k]
				}
			}
			out = append(out, task)
			created++
		}
	}
	if out != nil {
		next.Messages = out
	}
	next.Metadata["tasksFlattenProcessed"] = float64(bundles)
	next.Metadata["tasksMessagesFlattened"] = float64(bundles)
	next.Metadata["taskMessagesCreated"] = float64(created)
	return next, nil
}

func (d deps) tasksFlatten(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewTasksFlatten())
}
