package worker

import (
	"fmt"
	"testing"

	"github.com/convstream/convstream/conversation"
)

// BenchmarkDecodeCheckpoint decodes the checkpoint of a bench conversation
// into a conversation, as a rebuild does before replaying what follows it:
// format 2 takes the messages as written, format 1 (no checksum)
// validates and re-encodes each.
func BenchmarkDecodeCheckpoint(b *testing.B) {
	for _, name := range []string{"conversation-1716", "deep-26085"} {
		for _, format := range []int{checkpointFormat, 1} {
			b.Run(fmt.Sprintf("%s/format=%d", name, format), func(b *testing.B) {
				benchmarkDecodeCheckpoint(b, name, format)
			})
		}
	}
}

func benchmarkDecodeCheckpoint(b *testing.B, name string, format int) {
	value, err := conversationCheckpoint(benchConversation(b, name), 1, 1, 1).encode(nil)
	if err != nil {
		b.Fatal(err)
	}
	if format == 1 {
		value = rewriteCheckpoint(b, value, func(cp *checkpoint) { cp.Format, cp.Sum = 1, 0 })
	}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeCheckpoint(value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeCheckpoint encodes the checkpoint of a bench conversation,
// as a busy conversation's checkpoint write does on the writers: in new
// room (reuse=false), or in the room of the encode before (reuse=true),
// as the worker hands it from one write to the next.
func BenchmarkEncodeCheckpoint(b *testing.B) {
	for _, name := range []string{"conversation-1716", "deep-26085"} {
		cp := conversationCheckpoint(benchConversation(b, name), 1, 1, 1)
		for _, reuse := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/reuse=%t", name, reuse), func(b *testing.B) {
				var bufs *checkpointBuffers
				if reuse {
					bufs = new(checkpointBuffers)
				}
				b.ReportAllocs()
				var value []byte
				for b.Loop() {
					var err error
					if value, err = cp.encode(bufs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(value)), "stored-bytes")
			})
		}
	}
}

// benchConversation is the conversation of a bench file's messages, each
// validated and appended as an event's is.
func benchConversation(b *testing.B, name string) *conversation.Conversation {
	b.Helper()
	conv := conversation.NewConversation()
	for _, raw := range benchMessages(b, name) {
		m, err := conversation.NewMessageJSON(raw)
		if err == nil {
			err = conv.Append(m)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return conv
}
