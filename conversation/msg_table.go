package conversation

import "strings"

// msgTable holds a conversation's messages in append order and finds them
// by id. It keys by the hash each message keeps of its id (see idIndex),
// not by the id string: a map of 64-bit keys takes less memory, and it
// keeps no id that points into a replaced message's stored JSON. A deleted
// message leaves a hole in the order until compact.
type msgTable struct {
	order   []*Message       // append order; nil where a message was deleted
	byHash  map[uint64]int32 // id hash → position in order
	collide map[string]int32 // ids whose hash a different id holds
	holes   int
}

func newMsgTable() msgTable { return msgTable{byHash: map[uint64]int32{}} }

// len returns the number of messages.
func (t *msgTable) len() int { return len(t.byHash) + len(t.collide) }

// find returns the position of the message with id s, whose hash is h.
func (t *msgTable) find(s string, h uint64) (int32, bool) {
	if p, ok := t.byHash[h]; ok && t.order[p].id == s {
		return p, true
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
	if _, held := t.byHash[m.idHash]; !held {
		t.byHash[m.idHash] = pos
		return
	}
	if t.collide == nil {
		t.collide = map[string]int32{}
	}
	// A copy, so that the key does not keep m's stored JSON alive.
	t.collide[strings.Clone(m.id)] = pos
}

// replace puts m, a new version of a present message, in its place.
func (t *msgTable) replace(m *Message) {
	if p, ok := t.find(m.id, m.idHash); ok {
		t.order[p] = m
	}
}

// remove deletes the message with id s and hash h, leaving a hole.
func (t *msgTable) remove(s string, h uint64) {
	p, ok := t.find(s, h)
	if !ok {
		return
	}
	t.order[p] = nil
	t.holes++
	if q, ok := t.byHash[h]; ok && q == p {
		delete(t.byHash, h)
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
	*t = msgTable{order: make([]*Message, 0, cap(t.order)), byHash: make(map[uint64]int32, len(kept))}
	for _, m := range kept {
		t.add(m)
	}
}
