package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// appendForms are one message's data as publishers write it: json.Marshal
// of a map (the stored form), JSON.stringify of an object (members in
// their own order), and forms only the general decoder takes. fast says
// whether canonicalAppend builds the message itself.
var appendForms = []struct {
	name string
	data string
	fast bool
}{
	{"sorted", `{"content":"a \"quote\" \u003cb\u003e\n","createdAt":1704067200000,"id":"m1","parentId":null,"role":"user"}`, true},
	{"unsorted", `{"id":"m1","role":"user","content":"a \"quote\" \u003cb\u003e\n","parentId":null,"createdAt":1704067200000}`, true},
	{"spaced", `{"id": "m1", "role": "user", "content": "a \"quote\" <b>\n", "parentId": null, "createdAt": 1704067200000}`, false},
	{"other escapes", `{"content":"a \u0022quote\u0022 <b>\u000a","createdAt":1704067200000,"id":"m1","parentId":null,"role":"user"}`, false},
	{"other number", `{"content":"a \"quote\" <b>\n","createdAt":1.7040672e12,"id":"m1","parentId":null,"role":"user"}`, false},
}

// TestCanonicalAppend checks which forms validate builds the message of
// itself, and that it builds the message the general way builds.
func TestCanonicalAppend(t *testing.T) {
	var want []byte
	for _, f := range appendForms {
		ev, err := streams.NewEvent("ev-"+f.name, streams.TypeMessageAppended, "urn:test", "c1", json.RawMessage(f.data))
		if err != nil {
			t.Fatal(err)
		}
		d := &delivery{event: ev, conversationID: "c1"}
		if err := (&Worker{}).validate(context.Background(), d); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if (d.message != nil) != f.fast || (d.data == nil) != f.fast {
			t.Errorf("%s: message %v, data %v; want the message built by validate: %v", f.name, d.message != nil, d.data != nil, f.fast)
		}
		m := d.message
		if m == nil {
			if m, err = conversation.NewMessage(d.data); err != nil {
				t.Fatal(err)
			}
		}
		got, err := m.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
		} else if string(got) != string(want) {
			t.Errorf("%s: %s, want %s", f.name, got, want)
		}
	}

	// What validate refuses stays refused, with the general way's reason.
	for data, code := range map[string]streams.RejectCode{
		`{"id":"","role":"user"}`:         streams.CodeMissingID,
		`{"id":"a\u0000b","role":"user"}`: streams.CodeInvalidData,
		`{"id":"a","parentId":"p\u0007"}`: streams.CodeInvalidData,
		`{"role":"user"}`:                 streams.CodeMissingID,
		`{"id":5,"role":"user"}`:          streams.CodeMissingID,
		// Duplicate keys are refused (TestNineShapes).
		`{"id":"a","role":"user","id":"b"}`:    streams.CodeBadData,
		`{"role":"user","id":"a","id":"b"}`:    streams.CodeBadData,
		`{"b":1,"id":"x","b":2,"role":"user"}`: streams.CodeBadData,
		// In the stored form, but nested beyond MaxDataDepth.
		`{"id":"a","x":` + strings.Repeat("[", streams.MaxDataDepth+1) + strings.Repeat("]", streams.MaxDataDepth+1) + `}`: streams.CodeBadData,
		// Deeper than the fast path follows, within MaxDataDepth.
		`{"id":"a","x":` + strings.Repeat("[", streams.MaxDataDepth-1) + strings.Repeat("]", streams.MaxDataDepth-1) + `}`: "",
	} {
		ev, err := streams.NewEvent("ev", streams.TypeMessageAppended, "urn:test", "c1", json.RawMessage(data))
		if err != nil {
			t.Fatal(err)
		}
		d := &delivery{event: ev, conversationID: "c1"}
		err = (&Worker{}).validate(context.Background(), d)
		if code == "" {
			if err != nil || d.message != nil {
				t.Errorf("%s: %v, built %v; want the general way's decoding", data, err, d.message != nil)
			}
			continue
		}
		var rej *streams.RejectError
		if !errors.As(err, &rej) || rej.Code != code || d.message != nil {
			t.Errorf("%s: %v; want %s", data, err, code)
		}
	}
}

// TestCanonicalAppendsThroughWorker sends a conversation's messages in every
// form of appendForms through a worker: each conversation must end as
// Parse makes it.
func TestCanonicalAppendsThroughWorker(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	want := map[string]*conversation.Conversation{}
	for _, f := range appendForms {
		conv := "forms-" + natstest.CaseID(len(want))
		live := conversation.NewConversation()
		for k := range 3 {
			// The form's text with this message's id and parent.
			id, parent := "m"+string(rune('1'+k)), any(nil)
			if k > 0 {
				parent = "m" + string(rune('0'+k))
			}
			data := rewriteIDs(t, f.data, id, parent)
			if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, json.RawMessage(data)); err != nil {
				t.Fatal(err)
			}
			m, err := conversation.NewMessageJSON([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if err := live.Append(m); err != nil {
				t.Fatal(err)
			}
		}
		want[conv] = live
	}
	natstest.CheckStored(t, c, want, 10*time.Second)
}

// rewriteIDs replaces the "m1" id and the null parent of an appendForms
// text, keeping its form.
func rewriteIDs(t *testing.T, data, id string, parent any) string {
	t.Helper()
	out := replaceOnce(t, data, `"m1"`, `"`+id+`"`)
	if p, ok := parent.(string); ok {
		out = replaceOnce(t, out, `null`, `"`+p+`"`)
	}
	return out
}

// replaceOnce is strings.Replace of the first old, which must be there.
func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("no %s in %s", old, s)
	}
	return strings.Replace(s, old, repl, 1)
}

// BenchmarkValidateAppend measures validating an append and building its
// message, for each form of appendForms (with a 256-byte content): the
// first two take canonicalAppend, the others the general way.
func BenchmarkValidateAppend(b *testing.B) {
	content := strings.Repeat("lorem ipsum dolor sit amet ", 10)[:256]
	for _, f := range appendForms {
		data := strings.Replace(f.data, `"content":"`, `"content":"`+content, 1)
		data = strings.Replace(data, `"content": "`, `"content": "`+content, 1)
		ev, err := streams.NewEvent("ev", streams.TypeMessageAppended, "urn:test", "c1", json.RawMessage(data))
		if err != nil {
			b.Fatal(err)
		}
		w := &Worker{}
		b.Run(strings.ReplaceAll(f.name, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := &delivery{event: ev, conversationID: "c1"}
				if err := w.validate(context.Background(), d); err != nil {
					b.Fatal(err)
				}
				if d.message == nil {
					if _, err := conversation.NewMessage(d.data); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
