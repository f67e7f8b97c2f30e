package conversation

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/convstream/convstream/internal/jsondiff"
)

func flatJSON(t testing.TB, flat []*Message) any { return jsonValue(t, flat) }

// checkAgainstParse compares the conversation's flat list and result with a
// full Parse of its messages.
func checkAgainstParse(t *testing.T, name string, step int, conv *Conversation) {
	t.Helper()
	want, err := Parse(conv.Messages(), conv.Groups())
	if err != nil {
		t.Fatal(err)
	}
	flat, err := conv.FlatList()
	if err != nil {
		t.Fatal(err)
	}
	if d := jsondiff.Diff(flatJSON(t, want.FlatList), flatJSON(t, flat)); d != "" {
		t.Fatalf("%s step %d: flatList: %s", name, step, d)
	}
	got, err := conv.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := jsondiff.Diff(resultJSON(t, want), resultJSON(t, got)); d != "" {
		t.Fatalf("%s step %d: result: %s", name, step, d)
	}
}

// TestIncrementalMatchesParse builds conversations from the corpus one
// message at a time, with branch switches, edits and deletes mixed in, and
// after every step compares the conversation's views with a full Parse.
func TestIncrementalMatchesParse(t *testing.T) {
	// Conversations of up to smallConversation messages let go of their
	// index between reads: the corpus runs once so and once with every
	// conversation keeping it, whose small ones then grow in place.
	for _, small := range []int{smallConversation, 0} {
		t.Run(fmt.Sprintf("small-%d", small), func(t *testing.T) { incrementalMatchesParse(t, small) })
	}
}

func incrementalMatchesParse(t *testing.T, small int) {
	rng := rand.New(rand.NewPCG(1, 2))
	files := []string{"generated-normal", "generated-noise", "reference-suite"}
	for _, file := range files {
		cases := readCases(t, filepath.Join("testdata", "conformance", file+".jsonl.gz"))
		for i, c := range cases {
			if testing.Short() && i%5 != 0 {
				continue
			}
			if i%6 != 0 {
				continue
			}
			msgs, groups, err := DecodeInputBytes(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			conv := NewConversation()
			conv.smallWalk = int32(small)
			for _, g := range groups {
				if err := conv.UpsertGroup(g); err != nil {
					t.Fatal(err)
				}
			}
			for step, m := range msgs {
				if err := conv.Append(m); err != nil {
					// The corpus has orphans whose parent comes later and
					// duplicates; a refused append is fine, it must not corrupt.
					continue
				}
				// Read the flat list often, the full result now and then.
				if step%3 == 0 {
					if _, err := conv.FlatList(); err != nil {
						t.Fatal(err)
					}
				}
				if step%11 == 0 || step == len(msgs)-1 {
					checkAgainstParse(t, c.Name, step, conv)
				}
				switch r := rng.IntN(40); {
				case r == 0 && conv.Len() > 1:
					// Switch a branch somewhere.
					all := conv.Messages()
					target := all[rng.IntN(len(all))]
					_ = conv.Update(target.ID(), map[string]any{"metadata": map[string]any{"activeBranchIndex": float64(rng.IntN(3))}})
					checkAgainstParse(t, c.Name+" after switch", step, conv)
				case r == 1 && conv.Len() > 1:
					all := conv.Messages()
					target := all[rng.IntN(len(all))]
					_ = conv.Update(target.ID(), map[string]any{"content": fmt.Sprintf("edited %d", step)})
					checkAgainstParse(t, c.Name+" after edit", step, conv)
				case r == 2 && conv.Len() > 2:
					all := conv.Messages()
					_ = conv.Delete(all[rng.IntN(len(all))].ID())
					checkAgainstParse(t, c.Name+" after delete", step, conv)
				case r == 3:
					// A cache lets the index go while the conversation is quiet.
					conv.Compact()
					checkAgainstParse(t, c.Name+" after compact", step, conv)
				}
			}
		}
	}
}

// TestIncrementalEveryStep compares after every single append, and checks
// that appends off the walked path keep the flat list without a walk.
func TestIncrementalEveryStep(t *testing.T) {
	cases := readCases(t, filepath.Join("testdata", "conformance", "generated-normal.jsonl.gz"))
	kept := 0
	for i, c := range cases {
		if i%25 != 0 {
			continue
		}
		msgs, groups, err := DecodeInputBytes(c.Input)
		if err != nil {
			t.Fatal(err)
		}
		conv := NewConversation()
		for _, g := range groups {
			_ = conv.UpsertGroup(g)
		}
		for step, m := range msgs {
			if err := conv.Append(m); err != nil {
				continue
			}
			if conv.current {
				kept++
			}
			checkAgainstParse(t, c.Name, step, conv)
		}
	}
	if kept == 0 {
		t.Fatal("no append kept the flat list: the read set is never used")
	}
	t.Logf("%d appends kept the flat list", kept)
}

// TestSmallConversationSheds: a conversation of up to smallConversation
// messages keeps its flat list but not its index or walk once read (flat
// list, context tree or result); the next message walks again, and from
// smallConversation+1 on the conversation keeps them. Its views equal
// Parse's throughout, through updates, deletes and group upserts on a
// conversation that let its index go.
func TestSmallConversationSheds(t *testing.T) {
	conv := NewConversation()
	shed := func() bool { return conv.ix == nil && conv.walk == nil && conv.processed == nil }
	for k := range smallConversation + 3 {
		if err := conv.Append(chainMessage(k)); err != nil {
			t.Fatal(err)
		}
		if conv.current {
			t.Fatalf("append %d: the flat list counts as current", k)
		}
		flat, err := conv.FlatList()
		if err != nil {
			t.Fatal(err)
		}
		if len(flat) != k+1 {
			t.Fatalf("append %d: %d in the flat list", k, len(flat))
		}
		if small := k+1 <= smallConversation; shed() != small {
			t.Fatalf("%d messages: index let go %v, want %v", k+1, shed(), small)
		}
		again, err := conv.FlatList()
		if err != nil || &again[0] != &flat[0] {
			t.Fatalf("%d messages: a second read walked again (%v)", k+1, err)
		}
		if _, err := conv.ContextTree(); err != nil {
			t.Fatal(err)
		}
		if small := k+1 <= smallConversation; shed() != small {
			t.Fatalf("%d messages, after the context tree: index let go %v, want %v", k+1, shed(), small)
		}
		checkAgainstParse(t, "chain", k, conv)
	}

	small := NewConversation()
	for k := range 4 {
		if err := small.Append(chainMessage(k)); err != nil {
			t.Fatal(err)
		}
	}
	conv = small
	checkAgainstParse(t, "small", 0, conv)
	if !shed() {
		t.Fatal("a conversation of four kept its index")
	}
	if err := conv.Update(chainMessage(1).ID(), map[string]any{"content": "edited"}); err != nil {
		t.Fatal(err)
	}
	checkAgainstParse(t, "small after an update", 1, conv)
	if err := conv.Delete(chainMessage(3).ID()); err != nil {
		t.Fatal(err)
	}
	checkAgainstParse(t, "small after a delete", 2, conv)
	g, err := NewMessageGroup(map[string]any{"id": "g1", "type": "parallel"})
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.UpsertGroup(g); err != nil {
		t.Fatal(err)
	}
	checkAgainstParse(t, "small after a group", 3, conv)
	if !shed() {
		t.Fatal("the small conversation kept its index after reads")
	}
}
