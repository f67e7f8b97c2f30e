package worker

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/convstream/convstream/conversation"
)

// flatDelta is the difference between the flat list last published and the
// current one: entries before from are unchanged, and so are the last keep
// entries; tail holds the JSON of every entry between them.
type flatDelta struct {
	from int
	tail [][]byte
	// keep is how many entries at the end are the same messages as at the
	// old list's end: an edit in the middle of a long conversation carries
	// the entries it changed, not the rest of the list after them
	// (BenchmarkFairness: a 10,000-message conversation's updates published
	// about a megabyte each before).
	keep int
}

// diffFlat compares two flat lists entry by entry: an entry is unchanged
// when it is the same *Message (messages are immutable, and the
// conversation keeps the pointers of messages it did not change) or, for a
// new pointer, when its JSON is the same. Only entries from the first
// difference on are encoded, plus the few compared by JSON before it.
func diffFlat(old, cur []*conversation.Message) (flatDelta, error) {
	from, n := 0, min(len(old), len(cur))
	var first []byte // the JSON of cur[from], when computed by the comparison
	for ; from < n; from++ {
		if old[from] == cur[from] {
			continue
		}
		a, err := messageJSON(cur[from])
		if err != nil {
			return flatDelta{}, err
		}
		b, err := messageJSON(old[from])
		if err != nil {
			return flatDelta{}, err
		}
		if !bytes.Equal(a, b) {
			first = a
			break
		}
	}
	// The unchanged end, by identity only: the messages a conversation did
	// not touch keep their objects, and comparing JSON from the end would
	// cost what the delta saves.
	keep := 0
	for keep < min(len(old), len(cur))-from && old[len(old)-1-keep] == cur[len(cur)-1-keep] {
		keep++
	}
	d := flatDelta{from: from, tail: make([][]byte, 0, len(cur)-from-keep), keep: keep}
	for i := from; i < len(cur)-keep; i++ {
		if i == from && first != nil {
			d.tail = append(d.tail, first)
			continue
		}
		raw, err := messageJSON(cur[i])
		if err != nil {
			return flatDelta{}, err
		}
		d.tail = append(d.tail, raw)
	}
	return d, nil
}

// messageJSON is the JSON of a flat-list entry: the same bytes as
// (*Message).MarshalJSON. For a message the conversation was given, it is
// the message's stored JSON, shared rather than copied: read-only.
func messageJSON(m *conversation.Message) ([]byte, error) {
	return m.JSON()
}

// size is the number of bytes the tail takes in a JSON array.
func (d flatDelta) size() int {
	n := 0
	for _, raw := range d.tail {
		n += len(raw) + 1
	}
	return n
}

// deltaSize is about the size of the SnapshotDelta object encodeDelta
// writes, at least.
func deltaSize(id string, d flatDelta) int { return 160 + len(id) + d.size() }

// encodeDelta appends the SnapshotDelta object to b, written by hand as
// encodeSnapshot is.
func encodeDelta(b []byte, id string, version, base, seq uint64, length int, d flatDelta) []byte {
	b = slices.Grow(b, deltaSize(id, d))
	b = append(b, `{"conversationId":`...)
	b = strconv.AppendQuote(b, id) // ids are [A-Za-z0-9_-]: no escaping differences
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, version, 10)
	b = append(b, `,"baseVersion":`...)
	b = strconv.AppendUint(b, base, 10)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"from":`...)
	b = strconv.AppendInt(b, int64(d.from), 10)
	b = append(b, `,"length":`...)
	b = strconv.AppendInt(b, int64(length), 10)
	if d.keep > 0 {
		b = append(b, `,"keep":`...)
		b = strconv.AppendInt(b, int64(d.keep), 10)
	}
	b = append(b, `,"flatList":[`...)
	for i, raw := range d.tail {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, raw...)
	}
	return append(b, "]}"...)
}
