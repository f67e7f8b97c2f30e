package conversation

import (
	"fmt"
	"path/filepath"
	"testing"
)

// benchInputs are the shared benchmark conversations (see testdata/bench).
var benchInputs = []string{"conversation-1716", "flat-10000", "deep-26085"}

func loadBench(b testing.TB, name string) ([]*Message, []*MessageGroup) {
	b.Helper()
	cases := readCases(b, filepath.Join("testdata", "bench", name+".jsonl.gz"))
	if len(cases) != 1 {
		b.Fatalf("%s: want one conversation, got %d", name, len(cases))
	}
	msgs, groups, err := DecodeInputBytes(cases[0].Input)
	if err != nil {
		b.Fatal(err)
	}
	return msgs, groups
}

// BenchmarkParse measures Parse alone: decoding the JSON is not included,
// as in the reference's figures.
func BenchmarkParse(b *testing.B) {
	for _, name := range benchInputs {
		msgs, groups := loadBench(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(float64(len(msgs)), "msgs")
			for b.Loop() {
				if _, err := Parse(msgs, groups); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestBenchInputsParse(t *testing.T) {
	for _, name := range benchInputs {
		msgs, groups := loadBench(t, name)
		res, err := Parse(msgs, groups)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.MessageMap.Len() != len(msgs) {
			t.Errorf("%s: messageMap has %d of %d messages", name, res.MessageMap.Len(), len(msgs))
		}
		if len(res.FlatList) == 0 || len(res.ContextTree) == 0 {
			t.Errorf("%s: empty views", name)
		}
		t.Logf("%s: %d messages → flatList %d, contextTree %d roots", name, len(msgs), len(res.FlatList), len(res.ContextTree))
	}
}

// BenchmarkContextTree measures Conversation.ContextTree on a conversation
// already indexed and walked, as a snapshot store builds it after events:
// chains of 30 and 300 messages (user and assistant in turn, as `convctl
// load` sends them) and the bench conversations.
func BenchmarkContextTree(b *testing.B) {
	cases := map[string][]*Message{}
	var names []string
	for _, n := range []int{30, 300} {
		name := fmt.Sprintf("chain-%d", n)
		for k := range n {
			f := map[string]any{"id": fmt.Sprintf("m%d", k), "role": []string{"user", "assistant"}[k%2],
				"content": "hello", "createdAt": 1704067200000 + k, "parentId": nil}
			if k > 0 {
				f["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			cases[name] = append(cases[name], MustMessage(f))
		}
		names = append(names, name)
	}
	for _, name := range benchInputs {
		cases[name], _ = loadBench(b, name)
		names = append(names, name)
	}
	for _, name := range names {
		c := NewConversation()
		for _, m := range cases[name] {
			if err := c.Append(m); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			if _, err := c.ContextTree(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ContextTree(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
