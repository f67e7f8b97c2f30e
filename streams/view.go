package streams

import (
	"bytes"
	"encoding/json"
)

// View is a conversation's flatList as a follower of its snapshot deltas
// holds it.
type View struct {
	ConversationID string            `json:"conversationId"`
	Version        uint64            `json:"version"`
	Sequence       uint64            `json:"sequence"`
	FlatList       []json.RawMessage `json:"flatList"`
}

// ViewOf returns the view of a stored snapshot.
func ViewOf(s *Snapshot) (*View, error) {
	v := &View{ConversationID: s.ConversationID, Version: s.Version, Sequence: s.Sequence}
	if err := json.Unmarshal(s.FlatList, &v.FlatList); err != nil {
		return nil, err
	}
	return v, nil
}

// Apply applies a delta that follows the view (its base is the view's
// version, or it carries the whole list) and reports whether it did; a
// delta that does not follow leaves the view as it is: the follower has
// missed one and must reload the stored snapshot.
func (v *View) Apply(d *SnapshotDelta) bool {
	if d.BaseVersion != v.Version && (d.From != 0 || len(d.Append) > 0) {
		return false
	}
	list, ok := d.Apply(v.FlatList)
	if !ok {
		return false
	}
	v.FlatList, v.Version, v.Sequence = list, d.Version, d.Sequence
	if v.Sequence == 0 {
		v.Sequence = d.Version // a chunk's delta: the event applied is the version's
	}
	return true
}

// FillAppend fills the fields a chunk's delta leaves out (docs/events.md,
// "Snapshots"), which carries only version, baseVersion, length and
// append: its conversation (that of the subject it came on), its
// sequence (its version's) and from (the list's length). Other deltas are
// left as they are.
func (d *SnapshotDelta) FillAppend(conversationID string) {
	if len(d.Append) == 0 {
		return
	}
	if d.ConversationID == "" {
		d.ConversationID = conversationID
	}
	if d.Sequence == 0 {
		d.Sequence = d.Version
	}
	if d.FlatList == nil {
		d.From = d.Length
	}
}

// Apply applies a delta to the flatList of its base version and returns
// the flatList of its version. list is not modified.
func (d *SnapshotDelta) Apply(list []json.RawMessage) ([]json.RawMessage, bool) {
	if len(d.Append) > 0 {
		return d.applyAppend(list)
	}
	if d.From < 0 || d.Keep < 0 || d.From+d.Keep > len(list) || d.From+len(d.FlatList)+d.Keep != d.Length {
		return nil, false
	}
	out := make([]json.RawMessage, 0, d.Length)
	out = append(out, list[:d.From]...)
	out = append(out, d.FlatList...)
	return append(out, list[len(list)-d.Keep:]...), true
}

// applyAppend applies an append delta: its texts added to the entries they
// name. Each entry changed is decoded and encoded again (a follower's
// cost, not the worker's).
func (d *SnapshotDelta) applyAppend(list []json.RawMessage) ([]json.RawMessage, bool) {
	if d.Length != len(list) {
		return nil, false
	}
	out := make([]json.RawMessage, len(list))
	copy(out, list)
	for _, a := range d.Append {
		if a.Index < 0 || a.Index >= len(out) {
			return nil, false
		}
		raw, ok := AppendToEntry(out[a.Index], a)
		if !ok {
			return nil, false
		}
		out[a.Index] = raw
	}
	return out, true
}

// AppendToEntry returns the flatList entry raw with a's text appended to
// its field; false when raw is not the message a names.
func AppendToEntry(raw json.RawMessage, a TextAppend) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m["id"] != a.ID {
		return nil, false
	}
	switch a.Field {
	case AppendContent:
		s, _ := m["content"].(string)
		m["content"] = s + a.Text
	case AppendReasoning:
		r, _ := m["reasoning"].(map[string]any)
		if r == nil {
			r = map[string]any{}
		}
		s, _ := r["content"].(string)
		r["content"] = s + a.Text
		m["reasoning"] = r
	default:
		return nil, false
	}
	b, err := json.Marshal(m)
	return b, err == nil
}
