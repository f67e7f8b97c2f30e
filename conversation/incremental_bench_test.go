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
// date. Every 1,024 appends the conversation is rebuilt outside the timer,
// so the appended chain stays short. (A conversation just built holds its
// messages in slices and maps filled to capacity: the first appends after
// a rebuild pay their growth, O(n) once per doubling. Rebuilt every 64
// appends, that one-off cost made most of the 26,085-message figure — 24
// against 4 µs — where a worker keeps a conversation for many appends.)
func BenchmarkAppend(b *testing.B) {
	deep, _ := loadBench(b, "deep-26085")
	for _, n := range []int{500, len(deep)} {
		base := deep[:n]
		b.Run(fmt.Sprintf("deep-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var conv *Conversation
			parent := ""
			for i := 0; b.Loop(); i++ {
				if i%1024 == 0 {
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

// chainMessage is message k of a user/assistant chain: small contents, each
// the reply to the one before, as the stream worker sees them.
func chainMessage(k int) *Message {
	f := map[string]any{"id": fmt.Sprintf("c%d", k), "role": []string{"user", "assistant"}[k%2],
		"content": fmt.Sprintf("message %d", k), "createdAt": float64(1704067200000 + k), "parentId": nil}
	if k > 0 {
		f["parentId"] = fmt.Sprintf("c%d", k-1)
	}
	return MustMessage(f)
}

// BenchmarkAppendChain mimics the stream worker: a conversation that grew
// one reply at a time to n messages gets one more at the tail of its active
// path, and the flat list is read, per iteration. Every 64 appends the
// conversation is rebuilt to n messages outside the timer.
func BenchmarkAppendChain(b *testing.B) {
	for _, n := range []int{100, 2000} {
		b.Run(fmt.Sprintf("n-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var conv *Conversation
			k := 0
			for i := 0; b.Loop(); i++ {
				if i%1024 == 0 {
					b.StopTimer()
					conv = NewConversation()
					for k = 0; k < n; k++ {
						if err := conv.Append(chainMessage(k)); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := conv.FlatList(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := conv.Append(chainMessage(k)); err != nil {
					b.Fatal(err)
				}
				if _, err := conv.FlatList(); err != nil {
					b.Fatal(err)
				}
				k++
			}
		})
	}
}

// BenchmarkAppendCompacted is BenchmarkAppendChain's append to a
// conversation a cache has compacted (see Compact): the index and the walk
// are rebuilt, as for the first event after a quiet spell. Every 64 appends
// the conversation is rebuilt to n messages outside the timer. (Stopping
// the timer around every Compact would time the stops instead: with
// ReportAllocs each reads the memory statistics, stopping the world.)
func BenchmarkAppendCompacted(b *testing.B) {
	for _, n := range []int{20, 100, 2000} {
		b.Run(fmt.Sprintf("n-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var conv *Conversation
			k := 0
			for i := 0; b.Loop(); i++ {
				if i%64 == 0 {
					b.StopTimer()
					conv = NewConversation()
					for k = 0; k < n; k++ {
						if err := conv.Append(chainMessage(k)); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				conv.Compact() // cheap: it drops references
				if err := conv.Append(chainMessage(k)); err != nil {
					b.Fatal(err)
				}
				if _, err := conv.FlatList(); err != nil {
					b.Fatal(err)
				}
				k++
			}
		})
	}
}

// BenchmarkShortConversation builds a conversation of n chained messages as
// a worker does, the flat list after each append: the cost of the fixed
// structures a conversation has however short (see smallIDs).
func BenchmarkShortConversation(b *testing.B) {
	for _, n := range []int{1, 2, 5, 8, 20} {
		msgs := make([]*Message, n)
		for k := range msgs {
			msgs[k] = chainMessage(k)
		}
		// -tree: the context tree too after each append, as a worker that
		// stores every change.
		for _, tree := range []bool{false, true} {
			name := fmt.Sprintf("n-%d", n)
			if tree {
				name += "-tree"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					conv := NewConversation()
					for _, m := range msgs {
						if err := conv.Append(m); err != nil {
							b.Fatal(err)
						}
						if _, err := conv.FlatList(); err != nil {
							b.Fatal(err)
						}
						if !tree {
							continue
						}
						if _, err := conv.ContextTree(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
