package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// encodeSnapshot writes the snapshot object of a parse result. It is
// json.Marshal of a Snapshot, assembled by hand: encoding/json re-validates
// and compacts the output of every MarshalJSON method, once for each level
// of nesting, which made it the largest cost of applying an event.
func encodeSnapshot(id string, version, seq uint64, res *conversation.Result) ([]byte, error) {
	flat := make([][]byte, len(res.FlatList))
	for i, m := range res.FlatList {
		raw, err := messageJSON(m)
		if err != nil {
			return nil, err
		}
		flat[i] = raw
	}
	return encodeSnapshotOf(nil, id, version, seq, slices.Values(flat), res.ContextTree)
}

// encodeSnapshotOf is encodeSnapshot with the flatList already encoded,
// entry by entry (as the worker keeps it from its deltas, see flatJSON),
// appended to dst.
func encodeSnapshotOf(dst []byte, id string, version, seq uint64, flat iter.Seq[[]byte], tree []conversation.Node) ([]byte, error) {
	n := 256
	for raw := range flat {
		n += len(raw) + 1
	}
	b := slices.Grow(dst, n+64*len(tree))
	b = append(b, `{"format":`+strconv.Itoa(streams.SnapshotFormat)+`,"conversationId":`...)
	b = strconv.AppendQuote(b, id) // ids are [A-Za-z0-9_-]: no escaping differences
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, version, 10)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"flatList":[`...)
	first := true
	for raw := range flat {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, raw...)
	}
	b = append(b, `],"contextTree":[`...)
	for i := range tree {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = tree[i].AppendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, "]}"...), nil
}

// snapshotHeadOf returns the version and sequence of a stored snapshot,
// or an error wrapping streams.ErrNewerFormat when its format is newer than
// this release reads (the format is the first field of every snapshot,
// read before the rest is trusted),
// reading only as far as it must: encodeSnapshotOf writes both before the
// flat list and the context tree, which are nearly all of a large
// snapshot (unmarshalling one of 2 MB whole took 15 ms). Fields in
// another order are read too, past what comes before them; the rest of
// the snapshot is not checked.
func snapshotHeadOf(value []byte) (snapshotHead, error) {
	var h snapshotHead
	dec := json.NewDecoder(bytes.NewReader(value))
	if t, err := dec.Token(); err != nil {
		return h, err
	} else if t != json.Delim('{') {
		return h, fmt.Errorf("a snapshot is an object, not %v", t)
	}
	var version, sequence bool
	for !(version && sequence) && dec.More() {
		t, err := dec.Token()
		if err != nil {
			return h, err
		}
		switch t {
		case "format":
			var format int
			if err = dec.Decode(&format); err == nil {
				err = streams.CheckSnapshotFormat(format)
			}
		case "version":
			version = true
			err = dec.Decode(&h.Version)
		case "sequence":
			sequence = true
			err = dec.Decode(&h.Sequence)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return h, err
		}
	}
	return h, nil
}

// snapshotHead is the part of a stored snapshot the worker reads back.
type snapshotHead struct {
	Version  uint64 `json:"version"`
	Sequence uint64 `json:"sequence"`
}
