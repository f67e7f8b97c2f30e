package conversation

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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
		if got, ok := tb.getHashed(m.ID(), 7); !ok || got != m {
			t.Fatalf("get %q: %v, %v", m.ID(), got, ok)
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
		if got, ok := tb.getHashed(m.ID(), 7); !ok || got != m {
			t.Fatalf("after compact, get %q: %v, %v", m.ID(), got, ok)
		}
	}
}

// TestMsgTableAgainstModel runs random adds, replaces, removes and
// compactions on tables that start small (scanned) and grow past smallIDs
// (mapped), with ids hashed as usual or sharing a few hashes, and checks
// finds, lengths, order and parent references against a plain list.
func TestMsgTableAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		mk := func(id, parent string) *Message {
			f := map[string]any{"id": id}
			if parent != "" {
				f["parentId"] = parent
			}
			m := MustMessage(f)
			if run%2 == 1 { // ids of one length collide
				m.idHash = uint64(len(id) % 3)
				if m.hasParent {
					m.parentHash = uint64(len(parent) % 3)
				}
			}
			return m
		}
		tb := newMsgTable()
		var model []*Message
		ids := 0
		for step := range 2 * (smallIDs + run%16) {
			switch op := rng.IntN(10); {
			case op < 6 || len(model) == 0:
				parent := ""
				if len(model) > 0 && rng.IntN(4) > 0 {
					parent = model[rng.IntN(len(model))].ID()
				}
				ids++
				m := mk(strings.Repeat("x", ids%5)+strconv.Itoa(ids), parent)
				if rng.IntN(2) == 0 {
					tb.compact() // as Conversation does; without it, adds meet holes
				}
				tb.add(m)
				model = append(model, m)
			case op < 8:
				i := rng.IntN(len(model))
				m := mk(model[i].ID(), model[rng.IntN(len(model))].ID())
				tb.replace(m)
				model[i] = m
			case op < 9:
				i := rng.IntN(len(model))
				tb.remove(model[i].ID(), model[i].idHash)
				model = slices.Delete(model, i, i+1)
			default:
				tb.compact()
			}
			if tb.len() != len(model) || !slices.Equal(tb.messages(), model) {
				t.Fatalf("run %d step %d: %d messages %v, want %v", run, step, tb.len(), tb.messages(), model)
			}
			for _, m := range model {
				if got, ok := tb.getHashed(m.ID(), m.idHash); !ok || got != m {
					t.Fatalf("run %d step %d: get %q: %v, %v", run, step, m.ID(), got, ok)
				}
			}
			for h, e := range tb.byHash {
				if e.pos < 0 && e.refs <= 0 {
					t.Fatalf("run %d step %d: hash %d kept for nothing: %+v", run, step, h, e)
				}
			}
			hashes := []uint64{0, 1, 2, hashID("absent")}
			for _, m := range model {
				hashes = append(hashes, m.idHash, m.parentHash)
			}
			for _, h := range hashes {
				var want int32
				for _, m := range model {
					if m.hasParent && m.parentHash == h {
						want++
					}
				}
				if got := tb.referenced(h); got != want {
					t.Fatalf("run %d step %d: referenced(%d) = %d, want %d (mapped %v)", run, step, h, got, want, tb.byHash != nil)
				}
			}
		}
	}
}

// TestIDIndexAgainstModel adds messages with repeated ids, sharing a few
// hashes, to indexes sized small and large, and checks that the last of
// equal ids wins, as preprocess needs, and that add reports repeats.
func TestIDIndexAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 200 {
		n := 1 + run%(3*smallIDs)
		x := newIDIndex(rng.IntN(2 * smallIDs))
		last := map[string]int32{}
		for i := range n {
			id := strings.Repeat("y", rng.IntN(4)) + strconv.Itoa(rng.IntN(n))
			m := MustMessage(map[string]any{"id": id})
			m.idHash = uint64(len(id) % 2)
			_, seen := last[id]
			if got := x.add(m); got != seen {
				t.Fatalf("run %d add %d (%q): replaced %v, want %v", run, i, id, got, seen)
			}
			last[id] = int32(i)
			for id, want := range last {
				if p, ok := x.find(id, uint64(len(id)%2)); !ok || p != want {
					t.Fatalf("run %d after %d: find %q = %d, %v; want %d", run, i, id, p, ok, want)
				}
			}
			if _, ok := x.find("absent", 0); ok {
				t.Fatal("found an absent id")
			}
		}
	}
}
