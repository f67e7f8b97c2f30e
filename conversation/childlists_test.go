package conversation

import (
	"fmt"
	"slices"
	"testing"
)

// TestChildListsAppend checks the appendable child lists: built from the
// compressed ones, extended by add, they list children in order; a list
// returned before an add stays as it was (a walk holds them); and a clone
// and its original grow apart.
func TestChildListsAppend(t *testing.T) {
	// Parents: 1 and 2 of 0, 3 of 1; 4 has none.
	c := newChildLists([]int32{-1, 0, 0, 1, -1})
	c.toAppendable()
	want := [][]int32{{1, 2}, {3}, nil, nil, nil}
	check := func(what string, c *childLists, want [][]int32) {
		t.Helper()
		for p, w := range want {
			if got := c.of(int32(p)); !slices.Equal(got, w) {
				t.Errorf("%s: children of %d = %v, want %v", what, p, got, w)
			}
		}
	}
	check("built", &c, want)
	before := make([][]int32, len(want))
	for p := range want {
		before[p] = c.of(int32(p))
	}
	c.grow() // message 5
	c.grow() // message 6
	c.add(1, 5)
	c.add(0, 6)
	c.add(4, 5)
	for p, w := range want {
		if !slices.Equal(before[p], w) {
			t.Errorf("the list of %d returned before the appends changed: %v, was %v", p, before[p], w)
		}
	}
	want = [][]int32{{1, 2, 6}, {3, 5}, nil, nil, {5}, nil, nil}
	check("after appends", &c, want)

	d := c.clone()
	d.grow()
	d.add(1, 7)
	c.grow()
	c.add(1, 8)
	check("original after both grew", &c, [][]int32{{1, 2, 6}, {3, 5, 8}, nil, nil, {5}, nil, nil, nil})
	check("clone after both grew", &d, [][]int32{{1, 2, 6}, {3, 5, 7}, nil, nil, {5}, nil, nil, nil})
}

// TestAppendThreadMessages appends to both sides of a thread: the id tree
// (without thread messages) and the children map (with them) stop sharing
// their lists at the first thread message, and both keep growing. The
// conversation must equal Parse after every append.
func TestAppendThreadMessages(t *testing.T) {
	conv := NewConversation()
	conv.smallWalk = 0 // keep the index of a conversation this small
	add := func(id, parent, thread string) {
		f := map[string]any{"id": id, "role": "user", "content": id, "parentId": parent}
		if parent == "" {
			f["parentId"] = nil
		}
		if thread != "" {
			f["threadId"] = thread
		}
		if err := conv.Append(MustMessage(f)); err != nil {
			t.Fatal(err)
		}
		if _, err := conv.FlatList(); err != nil {
			t.Fatal(err)
		}
	}
	add("u", "", "")
	add("a", "u", "")
	step := 0
	for k := range 4 {
		add(fmt.Sprintf("t%d", k), "a", "th")
		if conv.ix == nil || conv.ix.mainKids == &conv.ix.kids {
			t.Fatal("the thread message did not split the id tree from the children map in place")
		}
		checkAgainstParse(t, "thread", step, conv)
		step++
		add(fmt.Sprintf("m%d", k), "a", "")
		checkAgainstParse(t, "main", step, conv)
		step++
	}
}
