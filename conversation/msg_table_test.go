package conversation

import (
	"slices"
	"testing"
)

// TestMsgTableCollisions forces ids to share a hash: the table must still
// tell them apart through adds, replaces, removes and compaction.
func TestMsgTableCollisions(t *testing.T) {
	mk := func(id string) *Message {
		m := MustMessage(map[string]any{"id": id})
		m.idHash = 7 // every id collides
		return m
	}
	tb := newMsgTable()
	a, b, c := mk("a"), mk("b"), mk("c")
	for _, m := range []*Message{a, b, c} {
		tb.add(m)
	}
	for _, m := range []*Message{a, b, c} {
		if got, ok := tb.getHashed(m.id, 7); !ok || got != m {
			t.Fatalf("get %q: %v, %v", m.id, got, ok)
		}
	}
	if _, ok := tb.getHashed("d", 7); ok {
		t.Fatal("found d")
	}
	b2 := mk("b")
	tb.replace(b2)
	tb.remove("a", 7)
	if _, ok := tb.getHashed("a", 7); ok {
		t.Fatal("a still present")
	}
	if got, _ := tb.getHashed("b", 7); got != b2 {
		t.Fatal("b not replaced")
	}
	a2 := mk("a")
	tb.compact()
	tb.add(a2)
	if tb.len() != 3 || !slices.Equal(tb.messages(), []*Message{b2, c, a2}) {
		t.Fatalf("len %d, messages %v", tb.len(), tb.messages())
	}
	for _, m := range []*Message{a2, b2, c} {
		if got, ok := tb.getHashed(m.id, 7); !ok || got != m {
			t.Fatalf("after compact, get %q: %v, %v", m.id, got, ok)
		}
	}
}
