package processors_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

func messageIDs(msgs []enginecore.Message) string {
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		s, _ := m["id"].(string)
		ids = append(ids, s)
	}
	return strings.Join(ids, ",")
}

// TestPlaceholderMessageFilter ports the upstream
// PlaceholderMessageFilterProcessor suite; each case names the upstream
// test it comes from.
func TestPlaceholderMessageFilter(t *testing.T) {
	cases := []struct {
		name, upstream string
		in             string
		ids            string
		removed        float64
	}{{
		name:     "failed placeholder with error",
		upstream: "should remove failed assistant placeholders that carry an error",
		in: `[{"content":"hi","id":"u1","role":"user"},
			{"content":"...","error":{"type":"CapabilityNotSupported"},"id":"a1","role":"assistant"},
			{"content":"retry","id":"u2","role":"user"}]`,
		ids: "u1,u2", removed: 1,
	}, {
		name:     "orphaned placeholders",
		upstream: "should remove orphaned placeholders that never got an error written",
		in: `[{"content":"hi","id":"u1","role":"user"},
			{"content":"...","error":null,"id":"a1","role":"assistant"},
			{"content":"","id":"a2","role":"assistant"},
			{"content":null,"id":"a3","role":"assistant"},
			{"id":"a4","role":"assistant"},
			{"content":"  ...\n","id":"a5","role":"assistant"}]`,
		ids: "u1", removed: 5,
	}, {
		name:     "real content kept",
		upstream: "should keep assistant messages with real content, even when errored",
		in: `[{"content":"partial answer before failing","error":{"type":"Timeout"},"id":"a1","role":"assistant"},
			{"content":"a full answer","id":"a2","role":"assistant"}]`,
		ids: "a1,a2",
	}, {
		name:     "tool calls kept",
		upstream: "should keep placeholder-content messages that carry tool calls",
		in: `[{"content":"...","id":"a1","role":"assistant","tools":[{"id":"tool_1"}]},
			{"content":"...","id":"a2","role":"assistant","tool_calls":[{"id":"call_1","type":"function"}]}]`,
		ids: "a1,a2",
	}, {
		name:     "empty tool arrays kept",
		upstream: "should keep empty-content messages whose tool_calls field exists but is empty",
		in: `[{"content":"","id":"a1","role":"assistant","tool_calls":[]},
			{"content":"","id":"a2","role":"assistant","tools":[]}]`,
		ids: "a1,a2",
	}, {
		name:     "attachments kept",
		upstream: "should keep empty-content messages that carry multimodal attachments",
		in: `[{"content":"","id":"a1","imageList":[{"id":"img1","url":"https://x/img.png"}],"role":"assistant"},
			{"content":"","fileList":[{"id":"f1"}],"id":"a2","role":"assistant"},
			{"audioList":[{"id":"au1"}],"content":"","id":"a3","role":"assistant"},
			{"content":"","id":"a4","role":"assistant","videoList":[{"id":"v1"}]}]`,
		ids: "a1,a2,a3,a4",
	}, {
		name:     "prunes containers",
		upstream: "should prune placeholder residue nested inside containers and drop emptied ones",
		in: `[{"content":"hi","id":"u1","role":"user"},
			{"content":"","id":"g1","role":"tasks","tasks":[{"content":"...","id":"c1"}]},
			{"children":[
				{"content":"...","id":"c2","role":"assistant"},
				{"content":"real reply","id":"c3","role":"assistant"},
				{"content":"","id":"c4","role":"tool","tool_call_id":"call_1"}],
			 "content":"","id":"g2","role":"assistantGroup"}]`,
		ids: "u1,g2", removed: 3, // c1, the emptied g1, c2
	}, {
		name:     "reasoning kept",
		upstream: "should keep placeholder-content messages that carry reasoning text",
		in:       `[{"content":"...","id":"a1","reasoning":{"content":"thought hard"},"role":"assistant"}]`,
		ids:      "a1",
	}, {
		name:     "multimodal and non-assistant kept",
		upstream: "should keep multimodal array content and non-assistant messages untouched",
		in: `[{"content":[{"text":"img","type":"text"}],"id":"a1","role":"assistant"},
			{"content":"...","id":"u1","role":"user"},
			{"content":"","id":"t1","role":"tool","tool_call_id":"call_1"}]`,
		ids: "a1,u1,t1",
	}, {
		name:     "manual prefill kept",
		upstream: "should keep intentionally added assistant messages (manual prefill)",
		in: `[{"content":"hi","id":"u1","role":"user"},
			{"content":"Sure! Here is my draft:","id":"a1","role":"assistant"}]`,
		ids: "u1,a1",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := process(t, processors.NewPlaceholderMessageFilter(), parseMessages(t, tc.in))
			if got := messageIDs(out.Messages); got != tc.ids {
				t.Fatalf("%s: kept %s, want %s", tc.upstream, got, tc.ids)
			}
			assertJSON(t, out.Metadata["placeholderMessageFilter"], `{"removedCount":`+formatFloat(tc.removed)+`}`)
		})
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// TestPlaceholderMessageFilterContainerChildren checks what is left inside
// a pruned container (upstream: "should prune placeholder residue nested
// inside containers and drop emptied ones").
func TestPlaceholderMessageFilterContainerChildren(t *testing.T) {
	out := process(t, processors.NewPlaceholderMessageFilter(), parseMessages(t, `[
		{"children":[
			{"content":"...","id":"c2","role":"assistant"},
			{"content":"real reply","id":"c3","role":"assistant"},
			{"content":"","id":"c4","role":"tool","tool_call_id":"call_1"}],
		 "content":"","id":"g2","role":"assistantGroup"}]`))
	assertJSON(t, out.Messages, `[{"children":[
		{"content":"real reply","id":"c3","role":"assistant"},
		{"content":"","id":"c4","role":"tool","tool_call_id":"call_1"}],
	 "content":"","id":"g2","role":"assistantGroup"}]`)
}

// TestPlaceholderMessageFilterAccumulates: the filter runs twice in a
// pipeline and the count adds up (upstream: "should accumulate
// removedCount across two pipeline passes").
func TestPlaceholderMessageFilterAccumulates(t *testing.T) {
	first := process(t, build(t, processors.NamePlaceholderMessageFilter, nil), parseMessages(t, `[{"content":"...","id":"a1","role":"assistant"}]`))
	second := processContext(t, build(t, processors.NamePostFlattenPlaceholderMessageFilter, nil), &enginecore.PipelineContext{
		Messages: parseMessages(t, `[{"content":"...","id":"a2","role":"assistant"}]`),
		Metadata: first.Metadata,
	})
	assertJSON(t, second.Metadata["placeholderMessageFilter"], `{"removedCount":2}`)
}

func TestPlaceholderMessageFilterConfigAndDeadline(t *testing.T) {
	err := configError(t, processors.NamePlaceholderMessageFilter, map[string]any{"enabled": true})
	if !errors.Is(err, processors.ErrInvalidConfig) || !strings.Contains(err.Error(), "enabled") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msgs := parseMessages(t, `[{"content":"...","id":"a1","role":"assistant"}]`)
	_, err = processors.NewPlaceholderMessageFilter().Process(ctx, &enginecore.PipelineContext{Messages: msgs, Metadata: map[string]any{}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
