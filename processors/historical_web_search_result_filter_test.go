package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

const (
	webSearchTool  = `{"apiName":"search","arguments":"{\"query\":\"latest LobeHub release\"}","id":"call_web_history","identifier":"lobe-web-browsing","type":"builtin"}`
	calculatorTool = `{"apiName":"add","arguments":"{\"a\":1,\"b\":2}","id":"call_calc_history","identifier":"calculator","type":"builtin"}`
)

// TestHistoricalWebSearchResultFilter ports the upstream
// HistoricalWebSearchResultFilter suite; each case names the upstream test
// it comes from.
func TestHistoricalWebSearchResultFilter(t *testing.T) {
	cases := []struct {
		upstream, in, want, meta string
	}{{
		upstream: "removes historical web search tool calls and results before the latest user turn",
		in: `[{"content":"search the web","id":"u1","role":"user"},
			{"content":"","id":"a1","role":"assistant","tools":[` + webSearchTool + `]},
			{"content":"<searchResults>large historical payload</searchResults>","id":"t1","plugin":` + webSearchTool + `,"role":"tool","tool_call_id":"call_web_history"},
			{"content":"Here is the answer from search.","id":"a2","role":"assistant","search":{"citations":[{"title":"Source","url":"https://example.com"}]}},
			{"content":"next question","id":"u2","role":"user"}]`,
		want: `[{"content":"search the web","id":"u1","role":"user"},
			{"content":"","id":"a1","role":"assistant"},
			{"content":"Here is the answer from search.","id":"a2","role":"assistant","search":{"citations":[{"title":"Source","url":"https://example.com"}]}},
			{"content":"next question","id":"u2","role":"user"}]`,
		meta: `{"removedToolMessages":1,"strippedAssistantMessages":1,"strippedToolCalls":1}`,
	}, {
		upstream: "keeps current-turn web search results after the latest user turn",
		in: `[{"content":"previous question","id":"u1","role":"user"},
			{"content":"previous answer","id":"a1","role":"assistant"},
			{"content":"search now","id":"u2","role":"user"},
			{"content":"","id":"a2","role":"assistant","tools":[` + webSearchTool + `]},
			{"content":"<searchResults>current payload</searchResults>","id":"t2","plugin":` + webSearchTool + `,"role":"tool","tool_call_id":"call_web_history"}]`,
		meta: `{"removedToolMessages":0,"strippedAssistantMessages":0,"strippedToolCalls":0}`,
	}, {
		upstream: "leaves non-web-search historical tools untouched",
		in: `[{"content":"calculate","id":"u1","role":"user"},
			{"content":"","id":"a1","role":"assistant","tools":[` + calculatorTool + `]},
			{"content":"{\"result\":3}","id":"t1","plugin":` + calculatorTool + `,"role":"tool","tool_call_id":"call_calc_history"},
			{"content":"next question","id":"u2","role":"user"}]`,
		meta: `{"removedToolMessages":0,"strippedAssistantMessages":0,"strippedToolCalls":0}`,
	}, {
		// Not upstream: OpenAI-shaped calls matched by function name, and
		// their results by call id.
		upstream: "(convstream) tool_calls by function name",
		in: `[{"content":"q","id":"u1","role":"user"},
			{"content":"","id":"a1","role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"lobe-web-browsing____search____builtin","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"calc____add","arguments":"{}"}}]},
			{"content":"results","id":"t1","role":"tool","tool_call_id":"c1"},
			{"content":"3","id":"t2","role":"tool","tool_call_id":"c2"},
			{"content":"next","id":"u2","role":"user"}]`,
		want: `[{"content":"q","id":"u1","role":"user"},
			{"content":"","id":"a1","role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"calc____add","arguments":"{}"}}]},
			{"content":"3","id":"t2","role":"tool","tool_call_id":"c2"},
			{"content":"next","id":"u2","role":"user"}]`,
		meta: `{"removedToolMessages":1,"strippedAssistantMessages":1,"strippedToolCalls":1}`,
	}}
	for _, tc := range cases {
		t.Run(tc.upstream, func(t *testing.T) {
			out := process(t, build(t, processors.NameHistoricalWebSearchResultFilter, nil), parseMessages(t, tc.in))
			want := tc.want
			if want == "" {
				want = tc.in
			}
			assertJSON(t, out.Messages, want)
			assertJSON(t, out.Metadata["historicalWebSearchResultFilter"], tc.meta)
		})
	}

	// No history before the only user message: nothing to do, no metadata.
	out := process(t, processors.NewHistoricalWebSearchResultFilter(), parseMessages(t, `[{"id":"u1","role":"user"},{"id":"a1","role":"assistant","tools":[`+webSearchTool+`]}]`))
	if _, ok := out.Metadata["historicalWebSearchResultFilter"]; ok || len(out.Messages[1]["tools"].([]any)) != 1 {
		t.Fatalf("changed a conversation without history: %v", out.Messages)
	}
}
