package conversation

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/convstream/convstream/internal/jsondiff"
)

// TestCompactReleases builds many small conversations as a worker caches
// them (a chain read after every append), compacts them, and requires
// that they then hold clearly fewer heap objects, which is what the
// garbage collector's marking costs; and that their views still equal
// Parse, before any change and after one.
func TestCompactReleases(t *testing.T) {
	const convs, msgs = 300, 21
	objects := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapObjects
	}
	base := objects()
	all := make([]*Conversation, convs)
	for i := range all {
		conv := NewConversation()
		for k := range msgs {
			if err := conv.Append(chainMessage(k)); err != nil {
				t.Fatal(err)
			}
			if _, err := conv.FlatList(); err != nil {
				t.Fatal(err)
			}
		}
		all[i] = conv
	}
	hot := objects() - base
	for _, conv := range all {
		conv.Compact(nil)
	}
	cold := objects() - base
	t.Logf("%d conversations of %d messages: %d heap objects, %d compacted", convs, msgs, hot, cold)
	if cold > hot/3 {
		t.Errorf("compacted conversations hold %d heap objects, want under a third of %d", cold, hot)
	}
	for i, conv := range all[:20] {
		checkAgainstParse(t, fmt.Sprintf("conversation %d compacted", i), msgs, conv)
		conv.Compact(nil)
		if err := conv.Append(chainMessage(msgs)); err != nil {
			t.Fatal(err)
		}
		checkAgainstParse(t, fmt.Sprintf("conversation %d compacted, then appended to", i), msgs+1, conv)
	}
	runtime.KeepAlive(all)
}

// TestCompactMovesMessages compacts the conformance corpus's conversations
// with their flat lists held: the messages move to one slab, and the flat
// list Compact returns names the moved messages where the held one named
// the conversation's, and is otherwise the same; the held list is left as
// it was. The flat list read next names the same messages, so that a
// delta between the two is empty.
func TestCompactMovesMessages(t *testing.T) {
	derived, moved := 0, 0
	eachConformanceInput(t, func(name string, msgs []*Message, _ [][]byte) {
		conv := NewConversation()
		for _, m := range msgs {
			_ = conv.Append(m) // refused ones stay out, as in a worker
		}
		held, err := conv.FlatList()
		if err != nil {
			t.Fatal(err)
		}
		before := slices.Clone(held)
		own := make([]bool, len(held))
		for i, m := range held {
			cur, ok := conv.msgs.get(m.id)
			own[i] = ok && cur == m
		}
		got := conv.Compact(held)
		if !slices.Equal(held, before) {
			t.Fatalf("%s: Compact changed the held list", name)
		}
		if n := conv.msgs.len(); len(conv.arena.slab) != n || cap(conv.arena.slab) != n {
			t.Fatalf("%s: %d messages in a slab of %d (room %d)", name, n, len(conv.arena.slab), cap(conv.arena.slab))
		}
		flat, err := conv.FlatList()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(before) || len(flat) != len(before) {
			t.Fatalf("%s: %d entries returned, %d read, %d held", name, len(got), len(flat), len(before))
		}
		for i, m := range got {
			switch {
			case own[i]:
				cur, _ := conv.msgs.get(m.id)
				if m != cur || m == before[i] || m.raw != before[i].raw || flat[i] != m {
					t.Fatalf("%s: entry %d (%s) not moved to the conversation's copy", name, i, m.id)
				}
				moved++
			case m != before[i]:
				t.Fatalf("%s: entry %d (%s), not the conversation's, changed", name, i, m.id)
			case m.Derived():
				derived++
			}
		}
	})
	if derived == 0 || moved == 0 {
		t.Fatalf("%d derived entries, %d moved", derived, moved)
	}
}

// TestCompactTree reads the context tree first after a compaction: the
// index it builds on must be rebuilt first.
func TestCompactTree(t *testing.T) {
	conv := NewConversation()
	for k := range 5 {
		if err := conv.Append(chainMessage(k)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conv.FlatList(); err != nil {
		t.Fatal(err)
	}
	conv.Compact(nil)
	tree, err := conv.ContextTree()
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse(conv.Messages(), conv.Groups())
	if err != nil {
		t.Fatal(err)
	}
	if d := jsondiff.Diff(jsonValue(t, want.ContextTree), jsonValue(t, tree)); d != "" {
		t.Fatalf("context tree after Compact: %s", d)
	}
}
