package conversation

import "hash/maphash"

// idSeed seeds the id hashes. It is chosen once per process, so crafted ids
// cannot aim at collisions; it never changes afterwards.
var idSeed = maphash.MakeSeed()

func hashID(s string) uint64 { return maphash.String(idSeed, s) }

// idIndex maps message ids to positions. Each message hashes its id and its
// parentId once, when it is built, so indexing a conversation costs integer
// map operations rather than string hashing. Two ids with the same hash are
// told apart by a fallback map of full strings.
type idIndex struct {
	byHash  map[uint64]int32
	collide map[string]int32 // ids whose hash an earlier, different id holds
	msgs    []*Message
}

func newIDIndex(n int) idIndex {
	return idIndex{byHash: make(map[uint64]int32, n), msgs: make([]*Message, 0, n)}
}

// add appends m and records it. It reports whether its id was already
// present (the new position then wins).
func (x *idIndex) add(m *Message) (replaced bool) {
	pos := int32(len(x.msgs))
	x.msgs = append(x.msgs, m)
	p, ok := x.byHash[m.idHash]
	if !ok {
		x.byHash[m.idHash] = pos
		return false
	}
	if x.msgs[p].id == m.id {
		x.byHash[m.idHash] = pos
		return true
	}
	if x.collide == nil {
		x.collide = map[string]int32{}
	}
	_, replaced = x.collide[m.id]
	x.collide[m.id] = pos
	return replaced
}

// find returns the position of the message with id s, whose hash is h.
func (x *idIndex) find(s string, h uint64) (int32, bool) {
	if p, ok := x.byHash[h]; ok && x.msgs[p].id == s {
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
