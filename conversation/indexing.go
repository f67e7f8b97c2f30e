package conversation

// Phase 1 of Parse: indexing. It builds the lookups every later phase uses,
// so that each of them is a slice or map access rather than a scan.

import "slices"

// noParent marks a message whose parentId names no message in the set.
const noParent int32 = -1

// index holds the messages of one Parse call and the relations between them.
// Messages are addressed by their position in msgs.
type index struct {
	msgs []*Message // preprocessed, one per id, in input order
	ids  idIndex    // id → position

	// roots are the children of "no parent" (childrenMap[null]), in input order.
	roots []int32
	// kids are the children of each message after the compressed-group
	// redirect (childrenMap[id]), in input order; read them with kidsOf.
	kids childLists
	// emptyParent holds messages whose parentId is the empty string: they are
	// nobody's children, but a walk may start from "" (see flatten), and they
	// are the children of a message whose id is "" (emptyID, or -1).
	emptyParent     []int32
	mainEmptyParent []int32
	emptyID         int32
	// rawKids are the messages whose own parentId names each message, before
	// any redirect, threads included. It is kids itself when the two agree.
	rawKids *childLists
	// mainKids are kids without thread messages: the id tree. It is kids
	// itself when there are no threads.
	mainKids *childLists
	// mainRoots are roots without thread messages.
	mainRoots []int32
	// narrowed overrides the children of a few parents while the flat-list
	// walk follows one continuation at a time (see flatWalker.continueRun).
	narrowed map[int32][]int32
	// reads, when set, records what a walk looks at (see readSet).
	reads *readSet
	// runs, when set, keeps the assistant-group messages of earlier walks
	// (see runCache).
	runs *runCache
	// views holds the decoded objects the flat-list walks read.
	views *viewCache
	// simple tells that no compressed group or empty id shapes this
	// conversation, so an append can update the index in place (see
	// Conversation.indexAppend).
	simple bool

	groups map[string]*MessageGroup
}

// childLists holds a list of children for each message in one shared array
// (compressed rows): the children of p are data[off[p]:off[p+1]].
//
// An index kept up to date in place (see Conversation.indexAppend) needs
// lists it can append to; toAppendable switches it to first, multi and
// many. A conversation is mostly chains, so a message with one child costs
// its first entry alone, with no slice or allocation of its own.
type childLists struct {
	off  []int32
	data []int32
	// first[p] is p's first child, or -1. It is never changed once set: a
	// list returned for p (a one-entry slice of first) stays what it was,
	// as the children lists a walk holds must.
	first []int32
	// multi[p] tells that p has several children, listed in many[p]
	// (clipped, so that an append never writes where a list returned
	// before could see it). A slice beside the map so that of, called at
	// every step of a walk, looks in the map only for those.
	multi []bool
	many  map[int32][]int32
}

// of returns the children of p; callers must not append to it.
func (c *childLists) of(p int32) []int32 {
	if c.first != nil {
		switch {
		case c.multi[p]:
			return c.many[p]
		case c.first[p] >= 0:
			return c.first[p : p+1 : p+1]
		}
		return nil
	}
	a, b := c.off[p], c.off[p+1]
	return c.data[a:b:b]
}

// toAppendable switches c to lists that appends can extend.
func (c *childLists) toAppendable() {
	if c.first != nil {
		return
	}
	n := len(c.off) - 1
	c.first, c.multi, c.many = make([]int32, n, n+n/4+1), make([]bool, n, n+n/4+1), map[int32][]int32{}
	for p := range n {
		a, b := c.off[p], c.off[p+1]
		c.first[p] = -1
		if b > a {
			c.first[p] = c.data[a]
		}
		if b-a > 1 {
			c.multi[p] = true
			c.many[int32(p)] = c.data[a:b:b]
		}
	}
	c.off, c.data = nil, nil
}

// grow makes room for one more message, without children.
func (c *childLists) grow() {
	c.first = append(c.first, -1)
	c.multi = append(c.multi, false)
}

// add appends child to the children of p.
func (c *childLists) add(p, child int32) {
	switch {
	case c.multi[p]:
		l := c.many[p]
		c.many[p] = append(l, child)[: len(l)+1 : len(l)+1]
	case c.first[p] >= 0:
		c.multi[p] = true
		c.many[p] = []int32{c.first[p], child}
	default:
		c.first[p] = child
	}
}

// clone returns a copy of appendable lists that appends to either leave the
// other as it is.
func (c *childLists) clone() childLists {
	d := childLists{first: slices.Clone(c.first), multi: slices.Clone(c.multi), many: make(map[int32][]int32, len(c.many))}
	for p, l := range c.many {
		d.many[p] = l[:len(l):len(l)]
	}
	return d
}

// newChildLists builds the lists from each message's parent position
// (negative: none), keeping input order.
func newChildLists(parent []int32) childLists {
	n := len(parent)
	off := make([]int32, n+1)
	for _, p := range parent {
		if p >= 0 {
			off[p+1]++
		}
	}
	for p := 0; p < n; p++ {
		off[p+1] += off[p]
	}
	data := make([]int32, off[n])
	next := make([]int32, n)
	copy(next, off[:n])
	for child, p := range parent {
		if p >= 0 {
			data[next[p]] = int32(child)
			next[p]++
		}
	}
	return childLists{off: off, data: data}
}

// kidsOf returns the current children of message p.
func (ix *index) kidsOf(p int32) []int32 {
	if ix.reads != nil {
		ix.reads.readKids(p)
	}
	if ix.narrowed != nil {
		if l, ok := ix.narrowed[p]; ok {
			return l
		}
	}
	if p == ix.emptyID {
		return ix.emptyParent
	}
	return ix.kids.of(p)
}

// mainKidsOf returns the children of p in the id tree.
func (ix *index) mainKidsOf(p int32) []int32 {
	if p == ix.emptyID {
		return ix.mainEmptyParent
	}
	return ix.mainKids.of(p)
}

// rawKidsOf returns the messages whose own parentId is p's id.
func (ix *index) rawKidsOf(p int32) []int32 {
	if ix.reads != nil {
		ix.reads.readKids(p)
	}
	return ix.rawKids.of(p)
}

// buildIndex runs the indexing phase over preprocessed messages and their
// id index.
func buildIndex(ids idIndex, groups []*MessageGroup) *index {
	msgs := ids.msgs
	n := len(msgs)
	ix := &index{msgs: msgs, ids: ids, emptyID: -1, views: newViewCache()}
	if p, ok := ids.lookup(""); ok {
		ix.emptyID = p
	}

	// A message created after a compression points at the last message hidden
	// inside the compressed group; it belongs under the group itself.
	var redirect map[string]int32
	for i, m := range msgs {
		if m.Role() != "compressedGroup" {
			continue
		}
		if r := m.rare(); r != nil && r.hasLastCompressed && r.lastCompressed != "" {
			last := r.lastCompressed
			if redirect == nil {
				redirect = make(map[string]int32)
			}
			redirect[last] = int32(i)
		}
	}

	ix.simple = redirect == nil && ix.emptyID < 0

	slot := make([]int32, n)
	raw := make([]int32, n)
	rootCount := 0
	threads := false
	for i, m := range msgs {
		raw[i] = noParent
		if m.hasParent {
			if p, ok := ids.find(m.parentID(), m.parentHash); ok {
				raw[i] = p
			}
		}
		threads = threads || m.inThread
		slot[i] = parentSlot(m, raw[i], redirect)
		if slot[i] == slotEmpty || slot[i] == slotNowhere {
			ix.simple = false
		}
		if slot[i] == slotRoot {
			rootCount++
		}
	}
	ix.kids = newChildLists(slot)
	if redirect == nil && ix.emptyID < 0 {
		// Without redirects the raw parentage is the children map itself.
		ix.rawKids = &ix.kids
	} else {
		raws := newChildLists(raw)
		ix.rawKids = &raws
	}
	ix.roots = make([]int32, 0, rootCount)
	for i := range msgs {
		switch slot[i] {
		case slotRoot:
			ix.roots = append(ix.roots, int32(i))
		case slotEmpty:
			ix.emptyParent = append(ix.emptyParent, int32(i))
		}
	}

	// Phase 2, structuring: the id tree of the main flow leaves threads out.
	if threads {
		main := make([]int32, n)
		for i, p := range slot {
			main[i] = p
			if msgs[i].inThread {
				main[i] = noParent
			}
		}
		mk := newChildLists(main)
		ix.mainKids = &mk
		ix.mainRoots = ix.withoutThreads(ix.roots)
		ix.mainEmptyParent = ix.withoutThreads(ix.emptyParent)
	} else {
		ix.mainKids = &ix.kids
		ix.mainRoots = ix.roots
		ix.mainEmptyParent = ix.emptyParent
	}

	if len(groups) > 0 {
		ix.groups = make(map[string]*MessageGroup, len(groups))
		for _, g := range groups {
			if g != nil && g.id.kind == keyString {
				ix.groups[g.id.s] = g
			}
		}
	}
	return ix
}

// Parent slots other than a message position.
const (
	slotRoot    int32 = -1 // no parent: a root
	slotEmpty   int32 = -2 // parentId "": reachable only from an empty-id walk
	slotNowhere int32 = -3 // a falsy non-string parentId: reachable from nowhere
)

// parentSlot decides where a message hangs in the children map, given the
// position of the message its parentId names (noParent when none).
func parentSlot(m *Message, named int32, redirect map[string]int32) int32 {
	if !m.hasParent {
		if m.parentNull || m.parentTruthy {
			// null, absent, or a truthy non-string (never a known id).
			return slotRoot
		}
		return slotNowhere
	}
	if m.parentID() == "" {
		return slotEmpty
	}
	if redirect != nil {
		if g, ok := redirect[m.parentID()]; ok {
			return g
		}
	}
	if named != noParent {
		return named
	}
	// The parent is not in this set: treat the message as a root so that a
	// chain whose head was not loaded stays visible.
	return slotRoot
}

func (ix *index) withoutThreads(ids []int32) []int32 {
	for j, c := range ids {
		if ix.msgs[c].inThread {
			out := append(make([]int32, 0, len(ids)-1), ids[:j]...)
			for _, c := range ids[j+1:] {
				if !ix.msgs[c].inThread {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return ids
}

// lastCompressedID finds the id of the last message hidden in a compressed
// group: its lastMessageId, else the last message of its compressedMessages
// or children (descending as far as they nest), else the result of its last
// tool call, else its own id.
func lastCompressedID(node map[string]any) (string, bool) {
	for node != nil {
		if v := node["lastMessageId"]; truthy(v) {
			s, ok := v.(string)
			return s, ok
		}
		if next, ok := lastObject(node["compressedMessages"]); ok {
			node = next
			continue
		}
		if next, ok := lastObject(node["children"]); ok {
			node = next
			continue
		}
		if tools, ok := node["tools"].([]any); ok && len(tools) > 0 {
			if t, ok := tools[len(tools)-1].(map[string]any); ok {
				if r, ok := t["result_msg_id"]; ok && r != nil {
					s, ok := r.(string)
					return s, ok
				}
			}
		}
		s, ok := node["id"].(string)
		return s, ok
	}
	return "", false
}

// lastObject returns the last element of a non-empty array. A last element
// that is not an object ends the descent with no id, as the reference's
// property reads on it would.
func lastObject(v any) (map[string]any, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, false
	}
	obj, _ := arr[len(arr)-1].(map[string]any)
	return obj, true
}

// msg returns the message at position i.
func (ix *index) msg(i int32) *Message { return ix.msgs[i] }

// lookup returns the position of the message with the given id.
func (ix *index) lookup(id string) (int32, bool) {
	p, ok := ix.ids.lookup(id)
	if !ok && ix.reads != nil {
		ix.reads.missed(id)
	}
	return p, ok
}

// parentOf returns the position of the message named by m's own parentId,
// or noParent.
func (ix *index) parentOf(m *Message) int32 {
	if !m.hasParent {
		return noParent
	}
	if p, ok := ix.ids.find(m.parentID(), m.parentHash); ok {
		return p
	}
	if ix.reads != nil {
		ix.reads.missed(m.parentID())
	}
	return noParent
}

// narrow makes [child] the children of p until restore, and returns the
// override it replaced, if any.
func (ix *index) narrow(p, child int32) (prev []int32, had bool) {
	if ix.narrowed == nil {
		ix.narrowed = make(map[int32][]int32)
	}
	prev, had = ix.narrowed[p]
	ix.narrowed[p] = []int32{child}
	return prev, had
}

// restore undoes narrow.
func (ix *index) restore(p int32, prev []int32, had bool) {
	if had {
		ix.narrowed[p] = prev
		return
	}
	delete(ix.narrowed, p)
}

// toAppendable switches the index's child lists to lists appends can
// extend (see Conversation.indexAppend).
func (ix *index) toAppendable() {
	ix.kids.toAppendable()
	if ix.mainKids != &ix.kids {
		ix.mainKids.toAppendable()
	}
}

// appendChild records message pos under parent slot (a position, or
// slotRoot), in the id tree too unless the message is in a thread.
func (ix *index) appendChild(slot, pos int32, inThread bool) {
	if inThread && ix.mainKids == &ix.kids {
		// The first thread message: the id tree stops sharing the children
		// map.
		main := ix.kids.clone()
		ix.mainKids = &main
		ix.mainRoots = ix.roots[:len(ix.roots):len(ix.roots)]
	}
	shared := ix.mainKids == &ix.kids
	ix.kids.grow()
	if !shared {
		ix.mainKids.grow()
	}
	if slot >= 0 {
		ix.kids.add(slot, pos)
		if !shared && !inThread {
			ix.mainKids.add(slot, pos)
		}
		return
	}
	ix.roots = append(ix.roots, pos)
	switch {
	case shared:
		ix.mainRoots = ix.roots
	case !inThread:
		ix.mainRoots = append(ix.mainRoots, pos)
	}
}
