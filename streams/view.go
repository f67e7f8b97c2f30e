package streams

import "encoding/json"

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
	if d.BaseVersion != v.Version && d.From != 0 {
		return false
	}
	list, ok := d.Apply(v.FlatList)
	if !ok {
		return false
	}
	v.FlatList, v.Version, v.Sequence = list, d.Version, d.Sequence
	return true
}

// Apply applies a delta to the flatList of its base version and returns
// the flatList of its version. list is not modified.
func (d *SnapshotDelta) Apply(list []json.RawMessage) ([]json.RawMessage, bool) {
	if d.From < 0 || d.Keep < 0 || d.From+d.Keep > len(list) || d.From+len(d.FlatList)+d.Keep != d.Length {
		return nil, false
	}
	out := make([]json.RawMessage, 0, d.Length)
	out = append(out, list[:d.From]...)
	out = append(out, d.FlatList...)
	return append(out, list[len(list)-d.Keep:]...), true
}
