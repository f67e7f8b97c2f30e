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
