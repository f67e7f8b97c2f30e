package processors_test

import (
	"context"
	"errors"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

const snapshotConversation = `[
	{"content":"Read this file","createdAt":1,"id":"user-1","role":"user","updatedAt":1,
	 "metadata":{"localSystemToolSnapshots":[{
		"apiName":"readLocalFile","arguments":{"path":"/tmp/a.ts"},"capturedAt":"2026-04-28T00:00:00.000Z",
		"content":"<file path=\"/tmp/a.ts\">hello</file>","identifier":"lobe-local-system","snapshotId":"snapshot-1",
		"state":{"content":"hello","path":"/tmp/a.ts"},"success":true,"toolCallId":"call_snapshot_1"}]}},
	{"content":"Answer","id":"assistant-1","role":"assistant"}]`

// TestLocalSystemToolSnapshotInjector ports "should replay persisted
// readLocalFile snapshots as real tool call/result pairs".
func TestLocalSystemToolSnapshotInjector(t *testing.T) {
	out := process(t, build(t, processors.NameLocalSystemToolSnapshotInjector, map[string]any{"enabled": true}), parseMessages(t, snapshotConversation))
	if len(out.Messages) != 4 || out.Messages[3]["id"] != "assistant-1" {
		t.Fatalf("messages %v", out.Messages)
	}
	assertJSON(t, out.Messages[1], `{"content":"","createdAt":1,"id":"user-1-snapshot-1-assistant","role":"assistant","updatedAt":1,
		"tools":[{"apiName":"readLocalFile","arguments":"{\"path\":\"/tmp/a.ts\"}","id":"call_snapshot_1","identifier":"lobe-local-system","type":"builtin"}]}`)
	assertJSON(t, out.Messages[2], `{"content":"<file path=\"/tmp/a.ts\">hello</file>","createdAt":1,"id":"user-1-snapshot-1-tool","role":"tool","updatedAt":1,
		"plugin":{"apiName":"readLocalFile","arguments":"{\"path\":\"/tmp/a.ts\"}","id":"call_snapshot_1","identifier":"lobe-local-system","type":"builtin"},
		"pluginState":{"content":"hello","path":"/tmp/a.ts"},"tool_call_id":"call_snapshot_1"}`)
	if out.Metadata["LocalSystemToolSnapshotInjectorInjectedCount"] != 1.0 {
		t.Fatalf("metadata %v", out.Metadata)
	}
}

func TestLocalSystemToolSnapshotInjectorOffAndDeadline(t *testing.T) {
	msgs := parseMessages(t, snapshotConversation)
	out := process(t, processors.NewLocalSystemToolSnapshotInjector(processors.LocalSystemToolSnapshotInjectorConfig{}), msgs)
	if len(out.Messages) != 2 {
		t.Fatal("injected while disabled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := processors.NewLocalSystemToolSnapshotInjector(processors.LocalSystemToolSnapshotInjectorConfig{Enabled: true}).
		Process(ctx, &enginecore.PipelineContext{Messages: msgs, Metadata: map[string]any{}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
