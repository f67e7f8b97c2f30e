package streams

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestEventRoundTrip(t *testing.T) {
	data := map[string]any{"id": "m1", "content": "héllo \"quoted\" 100%", "n": 3.5}
	for _, mode := range []Mode{Structured, Binary} {
		for _, ct := range []string{ContentTypeJSON, ContentTypeMsgpack} {
			ev, err := NewEventAs("ev 1%", TypeMessageAppended, "urn:test", "conv-1", ct, data)
			if err != nil {
				t.Fatal(err)
			}
			ev.SetExtension("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			ev.SetSubject("ünïcode subject")
			msg, err := EncodeEvent("convstream.events.conv-1", ev, mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := msg.Header.Get(jetstream.MsgIDHeader); got != "ev 1%" {
				t.Errorf("Nats-Msg-Id = %q", got)
			}
			if mode == Binary {
				if msg.Header.Get("ce-id") != "ev%201%25" || msg.Header.Get("content-type") != ct {
					t.Errorf("binary headers = %v", msg.Header)
				}
			}
			// Receivers must not depend on header case.
			h := nats.Header{}
			for k, v := range msg.Header {
				if mode == Binary && k == "ce-type" {
					k = "Ce-Type"
				}
				h[k] = v
			}
			back, err := DecodeEvent(h, msg.Data)
			if err != nil {
				t.Fatalf("mode %d %s: %v", mode, ct, err)
			}
			if back.ID() != "ev 1%" || back.Type() != TypeMessageAppended || back.Subject() != "ünïcode subject" {
				t.Errorf("mode %d %s: attributes = %v", mode, ct, back)
			}
			if got := (eventCarrier{back}).Get(ExtConversationID); got != "conv-1" {
				t.Errorf("conversationid = %q", got)
			}
			obj, err := DecodeData(back)
			if err != nil {
				t.Fatalf("mode %d %s: %v", mode, ct, err)
			}
			want, _ := json.Marshal(data)
			got, _ := json.Marshal(obj)
			if string(got) != string(want) {
				t.Errorf("mode %d %s: data = %s, want %s", mode, ct, got, want)
			}
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	cases := map[string]struct {
		h    nats.Header
		body string
	}{
		"no headers":          {nil, `{"specversion":"1.0"}`},
		"bad json":            {nats.Header{"content-type": {ContentTypeCloudEvents}}, `{not json`},
		"missing id":          {nats.Header{"content-type": {ContentTypeCloudEvents}}, `{"specversion":"1.0","type":"t","source":"s"}`},
		"binary missing type": {nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-source": {"s"}}, `{}`},
		"unknown specversion": {nats.Header{"ce-specversion": {"9.9"}, "ce-id": {"1"}, "ce-source": {"s"}, "ce-type": {"t"}}, `{}`},
	}
	for name, c := range cases {
		if ev, err := DecodeEvent(c.h, []byte(c.body)); err == nil {
			t.Errorf("%s: decoded %v", name, ev)
		}
	}
}

func TestDecodeDataRefuses(t *testing.T) {
	for name, c := range map[string]struct{ ct, data string }{
		"array":        {ContentTypeJSON, `[1]`},
		"null":         {ContentTypeJSON, `null`},
		"truncated":    {ContentTypeJSON, `{"id":`},
		"text":         {"text/plain", `{"id":"x"}`},
		"empty":        {ContentTypeJSON, ``},
		"msgpack junk": {ContentTypeMsgpack, "\xc1"},
	} {
		ev, err := NewEventAs("1", TypeMessageAppended, "s", "c", ContentTypeJSON, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.SetData(c.ct, []byte(c.data)); err != nil {
			t.Fatal(err)
		}
		if obj, err := DecodeData(ev); err == nil {
			t.Errorf("%s: decoded %v", name, obj)
		}
	}
}

func TestPercentCoding(t *testing.T) {
	for _, s := range []string{"", "plain", "a b", "100%", `"q"`, "é", "\x7f\x00"} {
		enc := percentEncode(s)
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; c <= 0x20 || c >= 0x7f || c == '"' {
				t.Errorf("%q encodes to %q", s, enc)
			}
		}
		if dec, ok := percentDecode(enc); dec != s || !ok {
			t.Errorf("%q → %q → %q (%v)", s, enc, dec, ok)
		}
	}
	if got, ok := percentDecode("50%zz%4"); got != "50%zz%4" || ok {
		t.Errorf("malformed escapes: %q, ok %v", got, ok)
	}
}

func TestSubjects(t *testing.T) {
	s, err := NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	if s.Events("c1") != "convstream.events.c1" || s.EventsStream() != "CONVSTREAM_EVENTS" || s.SnapshotBucket() != "CONVSTREAM_SNAPSHOTS" {
		t.Errorf("names: %s %s %s", s.Events("c1"), s.EventsStream(), s.SnapshotBucket())
	}
	if id, ok := s.ConversationOf("events", "convstream.events.a_b-C9"); !ok || id != "a_b-C9" {
		t.Errorf("conversationOf = %q %v", id, ok)
	}
	for _, bad := range []string{"convstream.events.a.b", "convstream.events.", "convstream.snapshots.a", "other.events.a"} {
		if _, ok := s.ConversationOf("events", bad); ok {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := NewSubjects("a..b"); err == nil {
		t.Error("bad prefix accepted")
	}
	p, _ := NewSubjects("acme.chat")
	if p.EventsStream() != "ACME_CHAT_EVENTS" || p.Errors("@") != "acme.chat.errors.@" {
		t.Errorf("prefixed names: %s %s", p.EventsStream(), p.Errors("@"))
	}
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	if ValidConversationID(string(long)) || !ValidConversationID(string(long[:128])) {
		t.Error("length bound")
	}
}

// TestValidConversationIDBytes holds the id check to the pattern it
// documents, for every byte in every position and for the empty id.
func TestValidConversationIDBytes(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	ids := []string{"", "a", "é", "a.b", "a b", "a*", "a>"}
	for c := range 256 {
		ids = append(ids, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)}), string([]byte{byte(c)})+"z9")
	}
	for _, id := range ids {
		if got, want := ValidConversationID(id), pattern.MatchString(id); got != want {
			t.Errorf("ValidConversationID(%q) = %v, the pattern says %v", id, got, want)
		}
	}
}

// TestUnknownConversationReserved: the errors subject of events naming no
// usable conversation was P.errors._, which conversation "_" shared. Its
// token is one no conversation id can be.
func TestUnknownConversationReserved(t *testing.T) {
	if ValidConversationID(UnknownConversation) {
		t.Fatalf("%q is a valid conversation id", UnknownConversation)
	}
	s, _ := NewSubjects(DefaultPrefix)
	if s.Errors(UnknownConversation) == s.Errors("_") {
		t.Fatal("conversation _ shares the unknown conversation's errors subject")
	}
	if conv, ok := s.ConversationOf("errors", s.Errors(UnknownConversation)); ok {
		t.Fatalf("the unknown conversation's errors subject names conversation %q", conv)
	}
}
