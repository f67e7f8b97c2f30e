package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestVerifyMessage(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"user","content":"build it"},
		{"id":"2","role":"verify","content":"   "},
		{"id":"3","role":"verify","content":"  Tests fail: fix foo  "},
		{"id":"4","role":"verify","content":["not","text"]}
	]`)
	out := process(t, processors.NewVerifyMessage(), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"1","role":"user","content":"build it"},
		{"id":"3","role":"user","content":"<delivery_check_feedback>\nTests fail: fix foo\n</delivery_check_feedback>"}]`)
	assertJSON(t, out.Metadata, `{"verifyMessagesRemoved":2,"verifyFeedbackSurfaced":1}`)

	if out := process(t, processors.NewVerifyMessage(), msgs[:1]); &out.Messages[0] != &msgs[0] {
		t.Fatal("list without verify cards was copied")
	}
}
