package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// parseHeaderBlock reads "Name: value" lines into NATS headers; the fuzzer
// mutates the block as text.
func parseHeaderBlock(block string) nats.Header {
	h := nats.Header{}
	for _, line := range strings.Split(block, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		h[k] = append(h[k], strings.TrimLeft(v, " "))
	}
	return h
}

// FuzzDecodeEvent feeds arbitrary headers and payloads to the CloudEvents
// NATS binding. It may refuse them, but never panic; what it accepts is a
// valid event without control characters in its id, and it survives being
// encoded again in either mode with its attributes and data intact.
// Seeds: testdata/fuzz/FuzzDecodeEvent.
func FuzzDecodeEvent(f *testing.F) {
	f.Add("content-type: application/cloudevents+json",
		[]byte(`{"specversion":"1.0","id":"e1","source":"urn:s","type":"convstream.message.appended.v1","conversationid":"c1","data":{"id":"m1","role":"user"}}`))
	f.Add("ce-specversion: 1.0\nce-id: e%0A2\nce-source: urn:s\nce-type: convstream.message.deleted.v1\nce-conversationid: c1\ncontent-type: application/msgpack",
		[]byte("\x81\xa2id\xa2m1"))
	f.Fuzz(func(t *testing.T, headers string, payload []byte) {
		// toEvent's own reading of the JSON event format gives what the
		// SDK's binding gives, or fails where it fails.
		if m := newNATSMessage(parseHeaderBlock(headers), payload); m.ReadEncoding() != binding.EncodingUnknown {
			got, gotErr := toEvent(m)
			want, wantErr := binding.ToEvent(context.Background(), m)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("toEvent error %v, binding.ToEvent error %v", gotErr, wantErr)
			}
			if gotErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("toEvent read\n%v\nbinding.ToEvent\n%v", got, want)
			}
		}
		ev, err := DecodeEvent(parseHeaderBlock(headers), payload)
		if err != nil {
			if ev != nil {
				t.Fatalf("event and error: %v", err)
			}
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("accepted an invalid event: %v", err)
		}
		if hasControl(ev.ID()) {
			t.Fatalf("accepted id %q", ev.ID())
		}
		for _, mode := range []Mode{Structured, Binary} {
			m, err := EncodeEvent("convstream.events.x", ev, mode)
			if err != nil {
				// The SDK reads some values it will not write back (an
				// extension of an odd type); refusing is fine.
				continue
			}
			back, err := DecodeEvent(m.Header, m.Data)
			if err != nil {
				t.Fatalf("mode %d: re-encoded event unreadable: %v\n%v %q", mode, err, m.Header, m.Data)
			}
			if back.ID() != ev.ID() || back.Type() != ev.Type() || back.Source() != ev.Source() ||
				back.DataContentType() != ev.DataContentType() {
				t.Fatalf("mode %d: attributes changed: %v → %v", mode, ev.Context, back.Context)
			}
			if mode == Binary && !bytes.Equal(back.Data(), ev.Data()) {
				t.Fatalf("mode %d: data changed: %q → %q", mode, ev.Data(), back.Data())
			}
		}
	})
}

// FuzzDecodeData feeds arbitrary data in either encoding to the data
// decoder behind every event. It may refuse the data, but never panic;
// what it accepts is an object within MaxDataDepth whose JSON form decodes
// to the same value. Seeds: testdata/fuzz/FuzzDecodeData.
func FuzzDecodeData(f *testing.F) {
	f.Add(ContentTypeJSON, []byte(`{"id":"m1","metadata":{"activeBranchIndex":1}}`))
	f.Add(ContentTypeMsgpack, []byte("\x82\xa2id\xa2m1\xa8metadata\x81\xa1a\x93\x01\xc3\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, contentType string, data []byte) {
		ev := event.New()
		ev.SetDataContentType(contentType)
		ev.DataEncoded = data
		obj, err := DecodeData(&ev)
		if err != nil {
			if obj != nil {
				t.Fatalf("object and error: %v", err)
			}
			return
		}
		if obj == nil {
			t.Fatal("nil object without an error")
		}
		if d := depth(obj); d > MaxDataDepth {
			t.Fatalf("accepted data %d levels deep", d)
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("accepted data has no JSON form: %v", err)
		}
		again := event.New()
		again.DataEncoded = raw
		back, err := DecodeData(&again)
		if err != nil {
			t.Fatalf("JSON form refused: %v\n%s", err, raw)
		}
		if !reflect.DeepEqual(back, obj) {
			t.Fatalf("JSON form decodes differently:\n%v\n%v", obj, back)
		}
	})
}

// depth returns how deeply v's objects and arrays nest (iteratively).
func depth(v any) int {
	type item struct {
		v any
		d int
	}
	most := 0
	stack := []item{{v, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := it.v.(type) {
		case map[string]any:
			most = max(most, it.d+1)
			for _, e := range x {
				stack = append(stack, item{e, it.d + 1})
			}
		case []any:
			most = max(most, it.d+1)
			for _, e := range x {
				stack = append(stack, item{e, it.d + 1})
			}
		}
	}
	return most
}
