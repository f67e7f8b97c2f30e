package conversation

import "slices"

// Phase 1 of Parse: indexing. It builds the lookups every later phase uses,
// so that each of them is a slice or map access rather than a scan.

// noParent marks a message whose parentId names no message in the set.
const noParent int32 = -1

// index holds the messages of one Parse call and the relations between them.
// Messages are addressed by their position in msgs.
type index struct {
	msgs []*Message       // preprocessed, one per id, in input order
	byID map[string]int32 // id → position

	// roots are the children of "no parent" (childrenMap[null]), in input order.
	roots []int32
	// kids[i] are the children of msgs[i] after the compressed-group redirect
	// (childrenMap[id]), in input order. The flat-list walk may narrow one
	// entry temporarily; see flatWalker.narrow.
	kids [][]int32
	// emptyParent holds messages whose parentId is the empty string: they are
	// nobody's children, but a walk may start from "" (see flatten).
	emptyParent []int32
	// rawKids[i] are the messages whose own parentId is msgs[i].id, before any
	// redirect, threads included.
	rawKids [][]int32
	// mainKids[i] are kids[i] without thread messages: the id tree.
	mainKids [][]int32
	// mainRoots are roots without thread messages.
	mainRoots []int32

	groups map[string]*MessageGroup
}

// buildIndex runs the indexing phase over preprocessed messages and their
// id index.
func buildIndex(msgs []*Message, byID map[string]int32, groups []*MessageGroup) *index {
	n := len(msgs)
	ix := &index{msgs: msgs, byID: byID}

	// A message created after a compression points at the last message hidden
	// inside the compressed group; it belongs under the group itself.
	var redirect map[string]int32
	for i, m := range msgs {
		if m.role != "compressedGroup" {
			continue
		}
		if last, ok := lastCompressedID(m.fields); ok && last != "" {
			if redirect == nil {
				redirect = make(map[string]int32)
			}
			redirect[last] = int32(i)
		}
	}

	// Children lists are laid out in two shared arrays (counted first, then
	// filled in input order), which costs two allocations instead of one or
	// more per parent.
	slot := make([]int32, n)
	raw := make([]int32, n)
	kidCount := make([]int32, n+1)
	rawCount := make([]int32, n+1)
	rootCount := 0
	threads := false
	for i, m := range msgs {
		raw[i] = noParent
		if m.hasParent {
			if p, ok := byID[m.parentID]; ok {
				raw[i] = p
				rawCount[p]++
			}
		}
		threads = threads || m.inThread
		slot[i] = parentSlot(m, raw[i], redirect)
		switch {
		case slot[i] >= 0:
			kidCount[slot[i]]++
		case slot[i] == slotRoot:
			rootCount++
		}
	}
	ix.kids = spread(kidCount[:n], slot)
	ix.rawKids = spread(rawCount[:n], raw)
	ix.roots = make([]int32, 0, rootCount)
	for i := range msgs {
		switch slot[i] {
		case slotRoot:
			ix.roots = append(ix.roots, int32(i))
		case slotEmpty:
			ix.emptyParent = append(ix.emptyParent, int32(i))
		}
	}
	if p, ok := byID[""]; ok {
		// The children of a message with an empty id are those whose parentId
		// is "", as a lookup by that id would find them.
		ix.kids[p] = ix.emptyParent
	}

	// Phase 2, structuring: the id tree of the main flow leaves threads out.
	if threads {
		ix.mainKids = make([][]int32, n)
		for i, ks := range ix.kids {
			ix.mainKids[i] = ix.withoutThreads(ks)
		}
		ix.mainRoots = ix.withoutThreads(ix.roots)
	} else {
		// A copy of the outer slice: the flat-list walk narrows entries of
		// kids, and the id tree must not see that.
		ix.mainKids = slices.Clone(ix.kids)
		ix.mainRoots = ix.roots
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

// spread builds per-parent child lists from each child's parent (negative:
// none) and the number of children per parent, keeping input order.
func spread(count []int32, parent []int32) [][]int32 {
	total := 0
	for _, c := range count {
		total += int(c)
	}
	backing := make([]int32, total)
	lists := make([][]int32, len(count))
	off := 0
	for p, c := range count {
		if c > 0 {
			lists[p] = backing[off : off : off+int(c)]
			off += int(c)
		}
	}
	for child, p := range parent {
		if p >= 0 {
			lists[p] = append(lists[p], int32(child))
		}
	}
	return lists
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
		if m.parentNull || truthy(m.fields["parentId"]) {
			// null, absent, or a truthy non-string (never a known id).
			return slotRoot
		}
		return slotNowhere
	}
	if m.parentID == "" {
		return slotEmpty
	}
	if redirect != nil {
		if g, ok := redirect[m.parentID]; ok {
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
	i, ok := ix.byID[id]
	return i, ok
}

// parentOf returns the position of the message named by m's own parentId,
// or noParent.
func (ix *index) parentOf(m *Message) int32 {
	if !m.hasParent {
		return noParent
	}
	if p, ok := ix.byID[m.parentID]; ok {
		return p
	}
	return noParent
}
