package conversation

import (
	"fmt"
	"testing"
)

// activeLeaf returns the id of the last plain message on the active path:
// where a user's next reply goes.
func activeLeaf(tb testing.TB, conv *Conversation) string {
	tb.Helper()
	flat, err := conv.FlatList()
	if err != nil {
		tb.Fatal(err)
	}
	for i := len(flat) - 1; i >= 0; i-- {
		if m, ok := conv.Get(flat[i].ID()); ok && (m.Role() == "user" || m.Role() == "assistant") && !m.hasTools() {
			return m.ID()
		}
	}
	tb.Fatal("no plain message on the active path")
	return ""
}

func conversationOf(tb testing.TB, msgs []*Message) *Conversation {
	tb.Helper()
	conv := NewConversation()
	for _, m := range msgs {
		if err := conv.Append(m); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := conv.FlatList(); err != nil {
		tb.Fatal(err)
	}
	return conv
}

// BenchmarkAppend measures what a worker does per appended message: append
// it (a reply at the end of the active path) and bring the flat list up to
// date. Every 64 appends the conversation is rebuilt outside the timer, so
// the appended chain stays short.
func BenchmarkAppend(b *testing.B) {
	deep, _ := loadBench(b, "deep-26085")
	for _, n := range []int{500, len(deep)} {
		base := deep[:n]
		b.Run(fmt.Sprintf("deep-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var conv *Conversation
			parent := ""
			for i := 0; b.Loop(); i++ {
				if i%64 == 0 {
					b.StopTimer()
					conv = conversationOf(b, base)
					parent = activeLeaf(b, conv)
					b.StartTimer()
				}
				id := fmt.Sprintf("bench-%d", i)
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				m := MustMessage(map[string]any{"id": id, "role": role, "parentId": parent, "content": "next", "createdAt": float64(1e13 + i)})
				if err := conv.Append(m); err != nil {
					b.Fatal(err)
				}
				if _, err := conv.FlatList(); err != nil {
					b.Fatal(err)
				}
				parent = id
			}
		})
	}
}
