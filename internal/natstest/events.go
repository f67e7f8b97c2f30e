package natstest

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/schemas"
	"github.com/convstream/convstream/streams"
)

// CompiledSchemas compiles the contract once per test binary.
var CompiledSchemas = sync.OnceValues(schemas.Compile)

// CheckEvent validates a published CloudEvent, envelope and data, against
// the schemas.
func CheckEvent(t testing.TB, ev *event.Event) {
	t.Helper()
	set, err := CompiledSchemas()
	if err != nil {
		t.Fatal(err)
	}
	env, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := set.ValidateJSON(schemas.Envelope, env); err != nil {
		t.Errorf("%s envelope: %v\n%s", ev.Type(), err, env)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(env, &fields); err != nil {
		t.Fatal(err)
	}
	if _, b64 := fields["data_base64"]; b64 && ev.DataContentType() == streams.ContentTypeJSON {
		t.Errorf("%s: JSON data written as data_base64", ev.Type())
	}
	if err := set.ValidateJSON(ev.Type(), ev.Data()); err != nil {
		t.Errorf("%s data: %v\n%.2000s", ev.Type(), err, ev.Data())
	}
}

// CheckData validates event data the tests send against the schema of its
// type: the contract's inputs must admit the conformance corpus.
func CheckData(t testing.TB, typ string, v any) {
	t.Helper()
	set, err := CompiledSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Validate(typ, Decoded(t, v)); err != nil {
		t.Errorf("%s data: %v", typ, err)
	}
}

// ExtString returns the extension attribute name of ev as a string (""
// when absent).
func ExtString(ev *event.Event, name string) string {
	s, _ := types.ToString(ev.Extensions()[name])
	return s
}

// Recorder collects the CloudEvents published on a subject.
type Recorder struct {
	mu     sync.Mutex
	events []Recorded
}

// Recorded is a message a Recorder received: its subject and the event
// decoded from it, or why it could not be.
type Recorded struct {
	Subject string
	Event   *event.Event
	Err     error
}

// Record subscribes to subject on nc, flushed before it returns, and
// collects what arrives until t ends.
func Record(t testing.TB, nc *nats.Conn, subject string) *Recorder {
	t.Helper()
	r := &Recorder{}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		r.mu.Lock()
		r.events = append(r.events, Recorded{Subject: m.Subject, Event: ev, Err: err})
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	// A recorder holds whatever arrives: on a loaded machine the default
	// limits (65,536 messages, 64 MiB) dropped deltas of a corpus-sized
	// run (a slow consumer) that TestEmittedMatchesSchemas then waited
	// for in vain.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return r
}

// All returns what was received so far, in order.
func (r *Recorder) All() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.events...)
}

// Count counts what was received on subject so far (everything when
// subject is "").
func (r *Recorder) Count(subject string) int {
	n := 0
	for _, e := range r.All() {
		if subject == "" || e.Subject == subject {
			n++
		}
	}
	return n
}
