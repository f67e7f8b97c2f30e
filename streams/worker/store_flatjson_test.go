package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestFlatJSON keeps a flatJSON as publish does, delta after delta, while
// the conformance corpus's conversations grow a message at a time, and
// checks after each that it gives every entry's JSON, derived entries
// (assistant groups, tasks, compares) among them, and their size.
func TestFlatJSON(t *testing.T) {
	derivedSeen := 0
	for _, c := range natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 120) {
		conv := conversation.NewConversation()
		for _, g := range c.Groups {
			if err := conv.UpsertGroup(g); err != nil {
				t.Fatal(err)
			}
		}
		var f flatJSON
		var prev []*conversation.Message
		for _, m := range c.Msgs {
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
			f.replace(flat, len(prev), d)
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

// TestDeltaKeepsTheUnchangedEnd edits messages in the middle of each
// corpus conversation's flat list, one at a time: each delta carries the
// changed entries and keeps the end (an edit of one message in a long
// conversation carries that message, not the rest of the list), applying
// it to the list before gives the list after, and the derived entries'
// JSON follows.
func TestDeltaKeepsTheUnchangedEnd(t *testing.T) {
	kept, edits := 0, 0
	for _, c := range natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 40) {
		conv := conversation.NewConversation()
		for _, g := range c.Groups {
			if err := conv.UpsertGroup(g); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range c.Msgs {
			if err := conv.Append(m); err != nil {
				t.Fatal(err)
			}
		}
		prev, err := conv.FlatList()
		if err != nil {
			t.Fatal(err)
		}
		var f flatJSON
		d0, _ := diffFlat(nil, prev)
		f.replace(prev, 0, d0)
		list := slices.Collect(f.entries(prev, 0))
		for i := 0; i < len(prev); i += 3 {
			e := prev[i]
			if e.Derived() {
				continue
			}
			if err := conv.Update(e.ID(), map[string]any{"content": fmt.Sprintf("edited %d", i)}); err != nil {
				continue // not every entry is a stored message
			}
			flat, err := conv.FlatList()
			if err != nil {
				t.Fatal(err)
			}
			d, err := diffFlat(prev, flat)
			if err != nil {
				t.Fatal(err)
			}
			edits++
			if d.keep > 0 {
				kept++
			}
			var b []byte
			b = encodeDelta(b, "c", 2, 1, 2, len(flat), d)
			var sd streams.SnapshotDelta
			if err := json.Unmarshal(b, &sd); err != nil {
				t.Fatal(err)
			}
			raw := make([]json.RawMessage, len(list))
			for k, r := range list {
				raw[k] = r
			}
			got, ok := sd.Apply(raw)
			if !ok {
				t.Fatalf("%s: delta does not apply: from %d keep %d carried %d length %d on %d", c.Name, sd.From, sd.Keep, len(sd.FlatList), sd.Length, len(raw))
			}
			f.replace(flat, len(prev), d)
			want := slices.Collect(f.entries(flat, 0))
			for k := range flat {
				w, _ := messageJSON(flat[k])
				if flat[k].Derived() {
					w = want[k]
				}
				if k >= len(got) || !bytes.Equal(got[k], w) || !bytes.Equal(want[k], w) {
					t.Fatalf("%s: entry %d after editing %s differs", c.Name, k, e.ID())
				}
			}
			prev, list = flat, want
		}
	}
	if kept == 0 || edits == 0 {
		t.Fatalf("%d of %d edits kept an end", kept, edits)
	}
	t.Logf("%d of %d edits in the middle kept the end of the list", kept, edits)
}
