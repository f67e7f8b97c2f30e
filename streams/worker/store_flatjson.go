package worker

import (
	"iter"
	"slices"
	"sort"

	"github.com/convstream/convstream/conversation"
)

// flatJSON is the JSON of the entries of a conversation's flat list, kept
// so that deltas and stores copy it rather than encode it again. Only the
// derived entries (virtual messages the walk built, see
// conversation.Message.Derived) keep theirs here: any other entry's JSON
// is its message's own, shared (Message.JSON). A slice of every entry
// cost 24 bytes a message, 0.29x the JSON of flat-10000.
type flatJSON struct {
	derived []derivedJSON // by position, ascending
	bytes   int           // the size of their JSON
}

// derivedJSON is the JSON of the derived entry at pos.
type derivedJSON struct {
	pos  int
	json []byte
}

// entries returns the JSON of the entries of flat from position from on,
// in order; f holds that of its derived entries.
func (f *flatJSON) entries(flat []*conversation.Message, from int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		k := f.derivedFrom(from)
		for i := from; i < len(flat); i++ {
			m := flat[i]
			var raw []byte
			if m.Derived() {
				for k < len(f.derived) && f.derived[k].pos < i {
					k++
				}
				if k < len(f.derived) && f.derived[k].pos == i {
					raw = f.derived[k].json
				}
			} else {
				raw, _ = m.JSON() // no error for a message that is not derived
			}
			if !yield(raw) {
				return
			}
		}
	}
}

// derivedFrom returns the index in f.derived of the first entry at or
// after position from.
func (f *flatJSON) derivedFrom(from int) int {
	return sort.Search(len(f.derived), func(k int) bool { return f.derived[k].pos >= from })
}

// replace records the JSON of the derived entries of flat, the list d
// led to from a list of oldLen entries: those before d.from stay, those of
// the kept end move with it, and those of d.tail are new.
func (f *flatJSON) replace(flat []*conversation.Message, oldLen int, d flatDelta) {
	k := f.derivedFrom(d.from)
	keepFrom := f.derivedFrom(oldLen - d.keep)
	kept := slices.Clone(f.derived[keepFrom:])
	for _, e := range f.derived[k:keepFrom] {
		f.bytes -= len(e.json)
	}
	clear(f.derived[k:]) // the replaced entries' bytes may go
	f.derived = f.derived[:k]
	for j, raw := range d.tail {
		if flat[d.from+j].Derived() {
			f.derived = append(f.derived, derivedJSON{pos: d.from + j, json: raw})
			f.bytes += len(raw)
		}
	}
	shift := len(flat) - oldLen
	for _, e := range kept {
		e.pos += shift
		f.derived = append(f.derived, e)
	}
}
