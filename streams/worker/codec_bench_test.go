package worker

import (
	"strings"
	"testing"

	"github.com/convstream/convstream/streams"
)

// BenchmarkDecodeAppend decodes one message.appended event as the worker
// does (the CloudEvent from the NATS message, then its data into the map
// the conversation is built from), in each encoding a publisher may use: a
// structured JSON event, a binary-mode event with JSON data, and a
// binary-mode event with msgpack data. The message has a 256-byte content,
// as in `make load`; bytes/event is the NATS payload plus headers.
func BenchmarkDecodeAppend(b *testing.B) {
	data := map[string]any{"id": "m42", "role": "assistant", "parentId": "m41",
		"content": strings.Repeat("lorem ipsum dolor sit amet ", 10)[:256], "createdAt": 1704067200042,
		"metadata": map[string]any{"model": "gpt-4o", "usage": map[string]any{"totalTokens": 812}}}
	for _, enc := range []struct {
		name string
		mt   string
		mode streams.Mode
	}{
		{"structured-json", streams.ContentTypeJSON, streams.Structured},
		{"binary-json", streams.ContentTypeJSON, streams.Binary},
		{"binary-msgpack", streams.ContentTypeMsgpack, streams.Binary},
	} {
		b.Run(enc.name, func(b *testing.B) {
			ev, err := streams.NewEventAs("ev-1", streams.TypeMessageAppended, "urn:bench", "chat-1", enc.mt, data)
			if err != nil {
				b.Fatal(err)
			}
			msg, err := streams.EncodeEvent("convstream.events.chat-1", ev, enc.mode)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				got, err := streams.DecodeEvent(msg.Header, msg.Data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := streams.DecodeData(got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(msg.Data)+headerSize(msg.Header)), "bytes/event")
		})
	}
}
