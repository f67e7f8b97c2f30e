package natstest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// BinaryHeaders returns the ce-* headers of a binary-mode event.
func BinaryHeaders(typ, conv, contentType string) map[string]string {
	h := map[string]string{
		"ce-specversion":    "1.0",
		"ce-id":             fmt.Sprintf("b-%d", time.Now().UnixNano()),
		"ce-source":         "urn:hostile",
		"ce-type":           typ,
		"ce-conversationid": conv,
	}
	if contentType != "" {
		h["content-type"] = contentType
	}
	return h
}

// InferData checks that ev is of type typ and valid against the schemas,
// and decodes its data.
func InferData[T any](t testing.TB, ev *event.Event, typ string) T {
	t.Helper()
	var v T
	if ev.Type() != typ {
		t.Fatalf("reply type %s, want %s: %s", ev.Type(), typ, ev.Data())
	}
	CheckEvent(t, ev)
	if err := json.Unmarshal(ev.Data(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// PermissionsConfig returns a nats-server users block giving each user the
// worker permissions of its prefix.
func PermissionsConfig(users map[string]string) string {
	var b strings.Builder
	b.WriteString("authorization { users: [\n")
	for user, prefix := range users {
		s, _ := streams.NewSubjects(prefix)
		p := streams.WorkerPermissions(s)
		fmt.Fprintf(&b, "  { user: %s, password: %s-pw, permissions: { publish: { allow: %s }, subscribe: { allow: %s }, allow_responses: true } }\n",
			user, user, QuoteList(p.Publish), QuoteList(p.Subscribe))
	}
	b.WriteString("] }\n")
	return b.String()
}

// QuoteList writes l as a nats-server configuration list.
func QuoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// PlannedEvent is one event of a restart scenario.
type PlannedEvent struct {
	Conv string
	Type string
	Data any
}

// Plan turns corpus conversations into events (groups, appends, then an
// update and a delete each), interleaved across conversations as a busy
// system would publish them, and returns the local conversations they
// should produce.
func Plan(t testing.TB, cases []CorpusCase) ([]PlannedEvent, map[string]*conversation.Conversation) {
	t.Helper()
	per := make([][]PlannedEvent, len(cases))
	want := map[string]*conversation.Conversation{}
	for i, cc := range cases {
		conv := CaseID(i)
		live := conversation.NewConversation()
		for _, g := range cc.Groups {
			per[i] = append(per[i], PlannedEvent{conv, streams.TypeGroupsUpserted, g})
			_ = live.UpsertGroup(g)
		}
		for _, m := range cc.Msgs {
			per[i] = append(per[i], PlannedEvent{conv, streams.TypeMessageAppended, m})
			if err := live.Append(m); err != nil {
				t.Fatal(err)
			}
		}
		patch := map[string]any{"id": cc.Msgs[0].ID(), "content": "edited before the restart test ends"}
		per[i] = append(per[i], PlannedEvent{conv, streams.TypeMessageUpdated, patch})
		if err := live.Update(patch["id"].(string), patch); err != nil {
			t.Fatal(err)
		}
		last := cc.Msgs[len(cc.Msgs)-1].ID()
		per[i] = append(per[i], PlannedEvent{conv, streams.TypeMessageDeleted, map[string]any{"id": last}})
		if err := live.Delete(last); err != nil {
			t.Fatal(err)
		}
		want[conv] = live
	}
	var out []PlannedEvent
	for more := true; more; {
		more = false
		for i := range per {
			if len(per[i]) > 0 {
				out = append(out, per[i][0])
				per[i] = per[i][1:]
				more = true
			}
		}
	}
	return out, want
}
