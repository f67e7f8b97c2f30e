package streams

import (
	"encoding/json"
	"strconv"

	"github.com/convstream/convstream/conversation"
)

// encodeSnapshot writes the snapshot object of a parse result. It is
// json.Marshal of a Snapshot, assembled by hand: encoding/json re-validates
// and compacts the output of every MarshalJSON method, once for each level
// of nesting, which made it the largest cost of applying an event.
func encodeSnapshot(id string, version, seq uint64, res *conversation.Result) ([]byte, error) {
	b := make([]byte, 0, 4096)
	b = append(b, `{"conversationId":`...)
	b = strconv.AppendQuote(b, id) // ids are [A-Za-z0-9_-]: no escaping differences
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, version, 10)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"flatList":[`...)
	for i, m := range res.FlatList {
		if i > 0 {
			b = append(b, ',')
		}
		// The same bytes as (*Message).MarshalJSON, without the detour.
		raw, err := json.Marshal(m.Fields())
		if err != nil {
			return nil, err
		}
		b = append(b, raw...)
	}
	b = append(b, `],"contextTree":[`...)
	for i, n := range res.ContextTree {
		if i > 0 {
			b = append(b, ',')
		}
		raw, err := n.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, raw...)
	}
	return append(b, "]}"...), nil
}
