package conversation

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestAdoptCopiesTheMessage: every message of the conformance inputs,
// adopted by an arena, reads the same as before, keeps its strings in the
// arena's copy of its JSON, and leaves the message it was copied from as it
// was (its strings still in its own JSON).
func TestAdoptCopiesTheMessage(t *testing.T) {
	n, extras := 0, 0
	eachConformanceInput(t, func(name string, msgs []*Message, raws [][]byte) {
		var a arena
		for i, m := range msgs {
			raw := raws[i]
			orig, err := NewMessageCanonical(raw)
			if err != nil {
				t.Fatal(err)
			}
			p := a.adopt(orig)
			if !sameMessage(p, m) {
				t.Fatalf("%s: %s adopted as\n%#v, want\n%#v", name, raw, p, m)
			}
			checkShared(t, p)
			if len(raw) <= ownChunk && within(orig.raw, p.raw) {
				t.Fatalf("%s: %s: the adopted message keeps the original's JSON", name, raw)
			}
			if !sameMessage(orig, m) {
				t.Fatalf("%s: %s: adopting changed the original", name, raw)
			}
			checkShared(t, orig)
			if orig.x != nil {
				extras++
			}
			n++
		}
	})
	t.Logf("%d messages, %d with extras", n, extras)
}

// TestAdoptKeepsLargeMessagesApart: a message whose JSON is over ownChunk
// keeps its own allocation, and the chunks go on around it.
func TestAdoptKeepsLargeMessagesApart(t *testing.T) {
	var a arena
	small := mustMessage(t, `{"id":"a","role":"user"}`)
	large := mustMessage(t, `{"id":"b","role":"user","parentId":"a","content":"`+strings.Repeat("x", ownChunk)+`"}`)
	ps := []*Message{a.adopt(small), a.adopt(large), a.adopt(mustMessage(t, `{"id":"c","role":"user","parentId":"b"}`))}
	if !within(large.raw, ps[1].raw) {
		t.Error("a large message was copied into a chunk")
	}
	if within(small.raw, ps[0].raw) || !within(a.text.String(), ps[2].raw) {
		t.Error("small messages around a large one are not in the chunks")
	}
	for i, id := range []string{"a", "b", "c"} {
		if ps[i].ID() != id {
			t.Errorf("message %d: id %q, want %q", i, ps[i].ID(), id)
		}
	}
}

func mustMessage(t *testing.T, src string) *Message {
	t.Helper()
	m, err := NewMessageJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUpdateAdoptsWithinBounds: an update's replacement joins the arena
// while the old versions left there come to at most half of what it
// holds, and Bytes counts them, and the JSON of deleted messages.
func TestUpdateAdoptsWithinBounds(t *testing.T) {
	conv := NewConversation()
	for _, src := range []string{
		`{"id":"u","role":"user","content":"` + strings.Repeat("q", 600) + `"}`,
		`{"id":"a","role":"assistant","parentId":"u","content":""}`,
	} {
		if err := conv.Append(mustMessage(t, src)); err != nil {
			t.Fatal(err)
		}
	}
	inArena := func() bool {
		m, _ := conv.Get("a")
		return within(conv.arena.text.String(), m.raw)
	}
	// counted is Bytes without the arena's unused room, which moves as
	// replacements are adopted.
	counted := func() int { return conv.Bytes() - conv.arena.slack() }
	before := counted()
	old, _ := conv.Get("a")
	if err := conv.Update("a", map[string]any{"content": "a reply"}); err != nil {
		t.Fatal(err)
	}
	if !inArena() {
		t.Fatal("the first update's replacement is not in the arena")
	}
	if m, _ := conv.Get("a"); content(m) != "a reply" {
		t.Fatalf("content %q", content(m))
	}
	if got, want := counted(), before+len(`"a reply"`)-len(`""`)+len(old.raw); got != want {
		t.Errorf("Bytes = %d, want %d (the old version counted)", got, want)
	}
	adopted := 1
	for i := 1; i <= 40; i++ {
		if err := conv.Update("a", map[string]any{"content": strings.Repeat("r", 40*i)}); err != nil {
			t.Fatal(err)
		}
		if inArena() {
			adopted++
		}
		if 2*conv.arena.dead > conv.arena.bytes {
			t.Fatalf("update %d: %d dead bytes in an arena of %d", i, conv.arena.dead, conv.arena.bytes)
		}
	}
	if adopted == 41 {
		t.Error("every replacement was adopted: the old versions are not bounded")
	}
	if m, _ := conv.Get("a"); content(m) != strings.Repeat("r", 1600) {
		t.Errorf("content of %d bytes after the updates", len(content(m)))
	}
	t.Logf("%d of 41 replacements adopted, %d dead bytes of %d", adopted, conv.arena.dead, conv.arena.bytes)

	// A deleted message's JSON stays counted: the arena may hold it.
	before = counted()
	if err := conv.Delete("u"); err != nil {
		t.Fatal(err)
	}
	if got, want := counted(), before-messageOverhead; got != want {
		t.Errorf("Bytes after a delete = %d, want %d", got, want)
	}
}

func content(m *Message) string {
	v, _ := m.Get("content")
	s, _ := v.(string)
	return s
}

// TestBytesCountsTheArenaRoom: a conversation of one message holds a
// slab of one and a chunk of about its JSON, not room for more; Bytes
// counts them, and the allowance of any conversation.
func TestBytesCountsTheArenaRoom(t *testing.T) {
	conv := NewConversation()
	m := mustMessage(t, `{"id":"a","role":"user","content":"hi"}`)
	if err := conv.Append(m); err != nil {
		t.Fatal(err)
	}
	if n, c := cap(conv.arena.slab), int(conv.arena.text.cap); n != 1 || c >= 2*len(m.raw) {
		t.Errorf("a slab of %d and a chunk of %d bytes for one message of %d", n, c, len(m.raw))
	}
	held := len(m.raw) + messageOverhead
	room := int(conv.arena.text.cap) - len(m.raw)
	if got := conv.Bytes(); got != held+room+conversationOverhead {
		t.Errorf("Bytes = %d, want %d (%d for the message, %d of room, %d for the conversation)",
			got, held+room+conversationOverhead, held, room, conversationOverhead)
	}
}

// TestArenaGrows: the first slab or chunk of a growing arena holds one
// message, the second makes up the least size, and the next an eighth of
// what it holds; chunks hold whole messages of the size that opened them.
func TestArenaGrows(t *testing.T) {
	for _, c := range []struct{ held, need, share, least, want int }{
		{0, 1, 0, minSlab, 1}, {1, 1, 0, minSlab, 3}, {3, 1, 0, minSlab, 1}, {4, 1, 0, minSlab, 4},
		{40, 1, 5, minSlab, 5}, {5000, 1, 625, minSlab, 128},
		// Chunks: one message's JSON, then the rest of the least size if
		// it holds the next, else the least size.
		{0, 325, 0, minChunk, 325}, {325, 325, 40, minChunk, minChunk - 325}, {975, 325, 121, minChunk, minChunk},
		{2000, 3000, 250, minChunk, 3000},
	} {
		most := maxSlab
		if c.least == minChunk {
			most = maxChunk
		}
		if got := grown(c.held, c.need, c.share, c.least, most); got != c.want {
			t.Errorf("grown(%d, %d, %d) = %d, want %d", c.held, c.need, c.share, got, c.want)
		}
	}
	conv := NewConversation()
	var slabs []int
	for k := range 12 {
		m := mustMessage(t, fmt.Sprintf(`{"id":"m%d","role":"user","content":"hi"}`, k))
		if err := conv.Append(m); err != nil {
			t.Fatal(err)
		}
		if len(conv.arena.slab) == 1 {
			slabs = append(slabs, cap(conv.arena.slab))
		}
	}
	if fmt.Sprint(slabs) != "[1 3 4 4]" {
		t.Errorf("slabs of %v for 12 messages, want [1 3 4 4]", slabs)
	}

	// Chunks hold whole messages of the size that opened them: 20
	// messages of 350 bytes took 10,272 bytes of chunks (1.47x their
	// JSON) when a chunk of the least size held two of them.
	conv = NewConversation()
	content := strings.Repeat("x", 310)
	var chunks []int
	var last *byte
	json := 0
	for k := range 20 {
		m := mustMessage(t, fmt.Sprintf(`{"id":"m%02d","role":"user","content":%q}`, k, content))
		json += len(m.raw)
		if err := conv.Append(m); err != nil {
			t.Fatal(err)
		}
		if conv.arena.text.base != last {
			last = conv.arena.text.base
			chunks = append(chunks, int(conv.arena.text.cap))
		}
	}
	total := 0
	for _, c := range chunks {
		total += c
	}
	if float64(total) > 1.2*float64(json) {
		t.Errorf("chunks of %v, %d bytes, for %d bytes of JSON", chunks, total, json)
	}
}

// TestAppendCanonical: a conversation built with AppendCanonical from the
// conformance inputs' messages holds the same messages, in its arena, as
// one built with Append(NewMessageCanonical), keeps none of the caller's
// bytes, and refuses or skips what Append does.
func TestAppendCanonical(t *testing.T) {
	n := 0
	eachConformanceInput(t, func(name string, msgs []*Message, raws [][]byte) {
		want, got := NewConversation(), NewConversation()
		for _, raw := range raws {
			cm, err := NewMessageCanonical(raw)
			if err != nil {
				t.Fatal(err)
			}
			werr := want.Append(cm)
			buf := append([]byte(nil), raw...)
			gerr := got.AppendCanonical(buf)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%s: %s: Append: %v, AppendCanonical: %v", name, raw, werr, gerr)
			}
			clear(buf) // the conversation must not have kept it
			n++
		}
		wm, gm := want.Messages(), got.Messages()
		if len(wm) != len(gm) {
			t.Fatalf("%s: %d messages, want %d", name, len(gm), len(wm))
		}
		for i := range wm {
			if !sameMessage(gm[i], wm[i]) {
				t.Fatalf("%s: message %d is\n%#v, want\n%#v", name, i, gm[i], wm[i])
			}
			checkShared(t, gm[i])
		}
		if want.Bytes()-want.arena.slack() != got.Bytes()-got.arena.slack() {
			t.Errorf("%s: Bytes without room %d, want %d", name, got.Bytes()-got.arena.slack(), want.Bytes()-want.arena.slack())
		}
	})
	t.Logf("%d messages", n)

	conv := NewConversation()
	src := []byte(`{"id":"a","role":"user"}`)
	for i := range 2 { // the second is a redelivery: a no-op
		if err := conv.AppendCanonical(src); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := conv.AppendCanonical([]byte(`{"id":"a","role":"assistant"}`)); !errors.Is(err, ErrMessageExists) {
		t.Errorf("a different message with a present id: err = %v", err)
	}
	for _, bad := range []string{``, `[1]`, `{"id":`, `{"id":1}`, `{"role":"user"}`} {
		if err := conv.AppendCanonical([]byte(bad)); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	if conv.Len() != 1 {
		t.Errorf("%d messages, want 1", conv.Len())
	}

	// JSON over ownChunk keeps an allocation of its own, not the caller's.
	large := `{"content":"` + strings.Repeat("x", ownChunk) + `","id":"b","parentId":"a","role":"user"}`
	buf := []byte(large)
	if err := conv.AppendCanonical(buf); err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if m, _ := conv.Get("b"); m == nil || m.raw != large {
		t.Error("a large message does not read back as appended")
	}
}
