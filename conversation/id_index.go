package conversation

import (
	"hash/maphash"
	"slices"
)

// idSeed seeds the id hashes. It is chosen once per process, so crafted ids
// cannot aim at collisions; it never changes afterwards.
var idSeed = maphash.MakeSeed()

func hashID(s string) uint64 { return maphash.String(idSeed, s) }

// smallIDs is how many messages an idIndex or msgTable finds by scanning
// before it makes its maps: for a conversation of a few messages the maps
// (a few hundred bytes, and objects for the collector to mark) would cost
// more than the scan.
const smallIDs = 8

// idIndex maps message ids to positions. Each message hashes its id and its
// parentId once, when it is built, so indexing a conversation costs integer
// map operations rather than string hashing. Two ids with the same hash are
// told apart by a fallback map of full strings. Up to smallIDs messages it
// has no maps and scans msgs instead. A conversation's index has no maps of
// its own either: it finds ids through the conversation's message table
// (see Conversation.tableIndex).
type idIndex struct {
	byHash  map[uint64]int32
	collide map[string]int32 // ids whose hash an earlier, different id holds
	msgs    []*Message
	// table, when set, holds the same messages at the same positions, with
	// no holes and no id twice.
	table *msgTable
	// shared reports that msgs is table's order itself: no message needed
	// a copy of its own (see Conversation.tableIndex). That is one pointer
	// a message fewer for the collector to scan.
	shared bool
}

func newIDIndex(n int) idIndex {
	x := idIndex{msgs: make([]*Message, 0, n)}
	if n > smallIDs {
		x.byHash = make(map[uint64]int32, n)
	}
	return x
}

// add appends m and records it. It reports whether its id was already
// present (the new position then wins).
func (x *idIndex) add(m *Message) (replaced bool) {
	if x.table != nil {
		// The table took m first, and refuses an id it holds.
		if x.shared {
			if order := x.table.order; len(order) == len(x.msgs)+1 && order[len(x.msgs)] == m {
				x.msgs = order
				return false
			}
			// m is a copy (a sub-agent's): appending to the shared array
			// would overwrite the table's original.
			x.msgs, x.shared = slices.Clone(x.msgs), false
		}
		x.msgs = append(x.msgs, m)
		return false
	}
	if x.byHash == nil {
		_, replaced = x.find(m.ID(), m.idHash)
		x.msgs = append(x.msgs, m)
		if len(x.msgs) > smallIDs {
			x.mapAll()
		}
		return replaced
	}
	return x.record(m, int32(len(x.msgs)))
}

// record maps m's id to pos, appending m to msgs when pos is past its end.
func (x *idIndex) record(m *Message, pos int32) (replaced bool) {
	if int(pos) == len(x.msgs) {
		x.msgs = append(x.msgs, m)
	}
	p, ok := x.byHash[m.idHash]
	if !ok {
		x.byHash[m.idHash] = pos
		return false
	}
	if x.msgs[p].ID() == m.ID() {
		x.byHash[m.idHash] = pos
		return true
	}
	if x.collide == nil {
		x.collide = map[string]int32{}
	}
	_, replaced = x.collide[m.ID()]
	x.collide[m.ID()] = pos
	return replaced
}

// mapAll makes the maps of an index that outgrew scanning.
func (x *idIndex) mapAll() {
	x.byHash = make(map[uint64]int32, 2*len(x.msgs))
	for i, m := range x.msgs {
		x.record(m, int32(i))
	}
}

// find returns the position of the message with id s, whose hash is h.
func (x *idIndex) find(s string, h uint64) (int32, bool) {
	if x.table != nil {
		return x.table.find(s, h)
	}
	if x.byHash == nil {
		// The last of equal ids wins, as in the map.
		for i := len(x.msgs) - 1; i >= 0; i-- {
			if m := x.msgs[i]; m.idHash == h && m.ID() == s {
				return int32(i), true
			}
		}
		return 0, false
	}
	if p, ok := x.byHash[h]; ok && x.msgs[p].ID() == s {
		return p, true
	}
	if x.collide != nil {
		p, ok := x.collide[s]
		return p, ok
	}
	return 0, false
}

// lookup returns the position of the message with id s.
func (x *idIndex) lookup(s string) (int32, bool) { return x.find(s, hashID(s)) }
