package conversation

import "strings"

// msgTable holds a conversation's messages in append order and finds them
// by id. It keys by the hash each message keeps of its id (see idIndex),
// not by the id string: a map of 64-bit keys takes less memory, and it
// keeps no id that points into a replaced message's stored JSON. A deleted
// message leaves a hole in the order until compact. It also counts the
// messages naming each id as their parent (see referenced), in the same
// map: one map rather than two is about 650 bytes and four objects fewer
// for a conversation of 20 messages. Up to smallIDs entries (holes
// included) it has no map and scans order instead.
type msgTable struct {
	order   []*Message          // append order; nil where a message was deleted
	byHash  map[uint64]hashedID // by id hash
	collide map[string]int32    // ids whose hash a different id holds → position
	holes   int
}

// hashedID is what msgTable knows of an id hash: the position of the
// message with an id of that hash, or -1 when none is present, and how
// many messages name such an id as their parent, present or not.
type hashedID struct {
	pos, refs int32
}

func newMsgTable() msgTable { return msgTable{} }

// len returns the number of messages.
func (t *msgTable) len() int { return len(t.order) - t.holes }

// find returns the position of the message with id s, whose hash is h.
func (t *msgTable) find(s string, h uint64) (int32, bool) {
	if t.byHash == nil {
		for i, m := range t.order {
			if m != nil && m.idHash == h && m.ID() == s {
				return int32(i), true
			}
		}
		return 0, false
	}
	if e, ok := t.byHash[h]; ok && e.pos >= 0 && t.order[e.pos].ID() == s {
		return e.pos, true
	}
	if t.collide != nil {
		p, ok := t.collide[s]
		return p, ok
	}
	return 0, false
}

// get returns the message with id s.
func (t *msgTable) get(s string) (*Message, bool) { return t.getHashed(s, hashID(s)) }

// getHashed is get when the hash of s is known.
func (t *msgTable) getHashed(s string, h uint64) (*Message, bool) {
	if p, ok := t.find(s, h); ok {
		return t.order[p], true
	}
	return nil, false
}

// add appends m, whose id must not be present.
func (t *msgTable) add(m *Message) {
	pos := int32(len(t.order))
	t.order = append(t.order, m)
	switch {
	case t.byHash != nil:
		t.record(m, pos)
		t.ref(m, 1)
	case len(t.order) > smallIDs:
		t.byHash = make(map[uint64]hashedID, 2*len(t.order))
		for i, m := range t.order {
			if m != nil {
				t.record(m, int32(i))
				t.ref(m, 1)
			}
		}
	}
}

// referenced returns how many messages name an id of hash h as their
// parent: a new message can close a loop only if something points at it.
// Two ids with one hash only make a check run that was not needed.
func (t *msgTable) referenced(h uint64) int32 {
	if t.byHash != nil {
		return t.byHash[h].refs
	}
	var n int32
	for _, m := range t.order {
		if m != nil && m.hasParent && m.parentHash == h {
			n++
		}
	}
	return n
}

// ref counts m's parent reference up (d=1) or down (d=-1), once the table
// has its map.
func (t *msgTable) ref(m *Message, d int32) {
	if !m.hasParent {
		return
	}
	e, ok := t.byHash[m.parentHash]
	if !ok {
		e.pos = -1
	}
	e.refs += d
	t.put(m.parentHash, e)
}

// put stores e under h, or drops h when e says nothing.
func (t *msgTable) put(h uint64, e hashedID) {
	if e.pos < 0 && e.refs <= 0 {
		delete(t.byHash, h)
		return
	}
	t.byHash[h] = e
}

// record maps m's id, not present, to pos.
func (t *msgTable) record(m *Message, pos int32) {
	e, ok := t.byHash[m.idHash]
	if !ok || e.pos < 0 {
		e.pos = pos
		t.byHash[m.idHash] = e
		return
	}
	if t.collide == nil {
		t.collide = map[string]int32{}
	}
	// A copy, so that the key does not keep m's stored JSON alive.
	t.collide[strings.Clone(m.ID())] = pos
}

// replace puts m, a new version of a present message, in its place.
func (t *msgTable) replace(m *Message) {
	p, ok := t.find(m.ID(), m.idHash)
	if !ok {
		return
	}
	if t.byHash != nil {
		t.ref(t.order[p], -1)
		t.ref(m, 1)
	}
	t.order[p] = m
}

// remove deletes the message with id s and hash h, leaving a hole.
func (t *msgTable) remove(s string, h uint64) {
	p, ok := t.find(s, h)
	if !ok {
		return
	}
	m := t.order[p]
	t.order[p] = nil
	t.holes++
	if t.byHash == nil {
		return
	}
	t.ref(m, -1)
	if e, ok := t.byHash[h]; ok && e.pos == p {
		e.pos = -1
		t.put(h, e)
	} else {
		delete(t.collide, s)
	}
}

// messages returns the messages in append order.
func (t *msgTable) messages() []*Message {
	out := make([]*Message, 0, t.len())
	for _, m := range t.order {
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

// compact closes the holes deletes left.
func (t *msgTable) compact() {
	if t.holes == 0 {
		return
	}
	kept := t.messages()
	*t = msgTable{order: make([]*Message, 0, cap(t.order))}
	for _, m := range kept {
		t.add(m)
	}
}
