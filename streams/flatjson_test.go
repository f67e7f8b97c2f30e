package streams

import (
	"bytes"
	"slices"
	"testing"

	"github.com/convstream/convstream/conversation"
)

// TestFlatJSON keeps a flatJSON as publish does, delta after delta, while
// the conformance corpus's conversations grow a message at a time, and
// checks after each that it gives every entry's JSON, derived entries
// (assistant groups, tasks, compares) among them, and their size.
func TestFlatJSON(t *testing.T) {
	derivedSeen := 0
	for _, c := range loadCorpus(t, "generated-normal.jsonl.gz", 120) {
		conv := conversation.NewConversation()
		for _, g := range c.groups {
			if err := conv.UpsertGroup(g); err != nil {
				t.Fatal(err)
			}
		}
		var f flatJSON
		var prev []*conversation.Message
		for _, m := range c.msgs {
			if err := conv.Append(m); err != nil {
				t.Fatal(err)
			}
			flat, err := conv.FlatList()
			if err != nil {
				t.Fatal(err)
			}
			d, err := diffFlat(prev, flat)
			if err != nil {
				t.Fatal(err)
			}
			f.replaceFrom(flat, d.from, d.tail)
			prev = flat
			var want [][]byte
			derived := 0
			for _, e := range flat {
				raw, err := messageJSON(e)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, raw)
				if e.Derived() {
					derived += len(raw)
					derivedSeen++
				}
			}
			got := slices.Collect(f.entries(flat, 0))
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("%s after %s: entries differ:\n got %q\nwant %q", c.Name, m.ID(), got, want)
			}
			if n := f.bytes; n != derived {
				t.Fatalf("%s after %s: derived bytes %d, want %d", c.Name, m.ID(), n, derived)
			}
			from := len(flat) / 2
			if tail := slices.Collect(f.entries(flat, from)); !slices.EqualFunc(tail, want[from:], bytes.Equal) {
				t.Fatalf("%s after %s: entries from %d differ", c.Name, m.ID(), from)
			}
		}
	}
	if derivedSeen == 0 {
		t.Fatal("no derived entries in the corpus's flat lists")
	}
}
