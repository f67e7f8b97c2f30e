package schemas

import (
	"testing"

	"github.com/convstream/convstream/streams"
)

func TestCompileAll(t *testing.T) {
	s, err := Compile()
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{Envelope}, streams.Types()...)
	for _, n := range want {
		if _, ok := s.byName[n]; !ok {
			t.Errorf("no schema %s", n)
		}
	}
	if len(s.Names()) != len(want) {
		t.Errorf("names = %v", s.Names())
	}
}

func TestValidateExamples(t *testing.T) {
	s, err := Compile()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"convstream.message.appended.v1", `{"id":"m1","role":"user","content":"hi","parentId":null}`, true},
		{"convstream.message.appended.v1", `{"role":"user"}`, false},
		{"convstream.message.appended.v1", `{"id":"a1","role":"assistant","content":"","streamStatus":"streaming"}`, true},
		{"convstream.message.appended.v1", `{"id":"a1","streamStatus":"writing"}`, false},
		{"convstream.message.chunk.v1", `{"id":"a1","seq":1,"text":"Hel"}`, true},
		{"convstream.message.chunk.v1", `{"id":"a1","seq":0,"text":"Hel"}`, false},
		{"convstream.message.chunk.v1", `{"id":"a1","seq":2,"toolCalls":[{"index":0,"id":"c1","apiName":"get","arguments":"{\"ci"}]}`, true},
		{"convstream.message.completed.v1", `{"id":"a1","status":"done","content":"Hello","usage":{"totalTokens":3},"finishReason":"stop"}`, true},
		{"convstream.message.completed.v1", `{"id":"a1","status":"error","content":"","error":{"type":"ProviderBizError","message":"429"}}`, true},
		{"convstream.message.completed.v1", `{"id":"a1","status":"streaming","content":""}`, false},
		{"convstream.snapshot.delta.v1", `{"conversationId":"c","version":5,"baseVersion":4,"sequence":5,"from":2,"length":2,"flatList":[],"append":[{"i":1,"id":"a1","f":"content","t":"lo"}]}`, true},
		{"convstream.snapshot.delta.v1", `{"conversationId":"c","version":5,"baseVersion":4,"sequence":5,"from":2,"length":2,"flatList":[],"append":[{"i":1,"id":"a1","f":"tools","t":"lo"}]}`, false},
		{"convstream.event.rejected.v1", `{"eventId":"e","subject":"s","reason":"r","code":"chunk_out_of_order"}`, true},
		{"convstream.message.appended.v1", `{"id":7}`, false},
		{"convstream.message.updated.v1", `{"id":"m1","metadata":{"activeBranchIndex":1},"error":null}`, true},
		{"convstream.message.deleted.v1", `{"id":""}`, false},
		{"convstream.groups.upserted.v1", `{"id":"g1","mode":"compare","parentMessageId":"m1"}`, true},
		{"convstream.snapshot.updated.v1", `{"conversationId":"c1","version":1,"sequence":4,"flatList":[{"id":"m1"}],"contextTree":[{"id":"m1","type":"message"}]}`, true},
		{"convstream.snapshot.updated.v1", `{"format":1,"conversationId":"c1","version":1,"sequence":4,"flatList":[],"contextTree":[]}`, true},
		{"convstream.snapshot.updated.v1", `{"format":0,"conversationId":"c1","version":1,"sequence":4,"flatList":[],"contextTree":[]}`, false},
		{"convstream.snapshot.updated.v1", `{"conversationId":"c 1","version":1,"sequence":4,"flatList":[],"contextTree":[]}`, false},
		{"convstream.snapshot.updated.v1", `{"conversationId":"c1","version":1,"sequence":4,"flatList":[],"contextTree":[{"id":"x","type":"bogus"}]}`, false},
		{"convstream.snapshot.delta.v1", `{"conversationId":"c1","version":3,"baseVersion":2,"sequence":9,"from":1,"length":2,"flatList":[{"id":"m2"}]}`, true},
		{"convstream.snapshot.delta.v1", `{"conversationId":"c1","version":1,"baseVersion":0,"sequence":1,"from":0,"length":0,"flatList":[]}`, true},
		{"convstream.snapshot.delta.v1", `{"conversationId":"c1","version":3,"baseVersion":2,"sequence":9,"from":-1,"length":2,"flatList":[]}`, false},
		{"convstream.snapshot.delta.v1", `{"conversationId":"c1","version":3,"sequence":9,"from":1,"length":2,"flatList":[]}`, false},
		{"convstream.inference.requested.v1", `{"conversationId":"c1","leafId":"m2","params":{"HistoryTruncateProcessor":{"historyCount":2}}}`, true},
		{"convstream.inference.requested.v1", `{"leafId":"m2"}`, false},
		{"convstream.event.rejected.v1", `{"eventId":null,"subject":"convstream.events.a.b","reason":"bad","code":"bad_subject"}`, true},
		{"convstream.event.rejected.v1", `{"eventId":"e","subject":"s","reason":"r","code":"nope"}`, false},
		{"convstream.event.deadlettered.v1", `{"eventId":"e","subject":"convstream.events.c1","type":"convstream.message.appended.v1","conversationId":"c1","sequence":7,"deliveries":100,"consumer":"convstream-worker","reason":"nats: timeout"}`, true},
		{"convstream.event.deadlettered.v1", `{"eventId":null,"subject":"","sequence":7,"deliveries":1,"consumer":"w","reason":"unsettled"}`, true},
		{"convstream.event.deadlettered.v1", `{"eventId":"e","subject":"s","sequence":0,"deliveries":1,"consumer":"w","reason":"r"}`, false},
		{"convstream.event.deadlettered.v1", `{"eventId":"e","subject":"s","sequence":7,"deliveries":1,"consumer":"w"}`, false},
		{"convstream.pipeline.failed.v1", `{"requestId":"r","conversationId":"c","processor":"p","code":"processor_error","message":"m","cause":"c"}`, true},
		{"convstream.pipeline.failed.v1", `{"requestId":"r","conversationId":"c","processor":"","code":"too_large","message":"m","cause":"c"}`, true},
		{"convstream.pipeline.failed.v1", `{"requestId":"r","conversationId":"c","processor":"p","message":"m","cause":"c"}`, false},
		{"convstream.pipeline.failed.v1", `{"requestId":"r","conversationId":"c","processor":"p","code":"oops","message":"m","cause":"c"}`, false},
		{Envelope, `{"specversion":"1.0","id":"1","source":"s","type":"convstream.message.deleted.v1","conversationid":"c"}`, true},
		{Envelope, `{"specversion":"0.3","id":"1","source":"s","type":"convstream.message.deleted.v1"}`, false},
	}
	for _, c := range cases {
		err := s.ValidateJSON(c.name, []byte(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: ok=%v, err=%v", c.name, c.doc, c.ok, err)
		}
	}
	if err := s.Validate("nope", nil); err == nil {
		t.Error("unknown schema accepted")
	}
}
