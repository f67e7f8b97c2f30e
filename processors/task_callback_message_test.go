package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestTaskCallbackMessage(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"taskCallback","content":"Report ready","metadata":{"taskCallback":{"identifier":"T-7","reason":"failed"}}},
		{"id":"2","role":"taskCallback","content":"Done too","metadata":{"taskCallback":{"identifier":null}}},
		{"id":"3","role":"taskCallback","content":""}
	]`)
	out := process(t, build(t, processors.NameTaskCallbackMessage, nil), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"1","role":"user","metadata":{"taskCallback":{"identifier":"T-7","reason":"failed"}},
		 "content":"<task_result task=\"T-7\" status=\"failed\">\nReport ready\n</task_result>"},
		{"id":"2","role":"user","metadata":{"taskCallback":{"identifier":null}},
		 "content":"<task_result task=\"task\" status=\"done\">\nDone too\n</task_result>"}]`)
	assertJSON(t, out.Metadata, `{"taskCallbackMessagesSurfaced":2}`)
	configError(t, processors.NameTaskCallbackMessage, map[string]any{"unexpected": true})
}
