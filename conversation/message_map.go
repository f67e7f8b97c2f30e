package conversation

import "iter"

// MessageMap holds every message of a parsed conversation by id, as a UI
// shows it: legacy supervisor messages carry the supervisor role, and
// tool-using assistants keep only usage and performance in their metadata.
// Entries are finished when read, so a caller that never reads the map pays
// only for its index.
type MessageMap struct {
	ids idIndex
}

// Len returns the number of messages.
func (mm MessageMap) Len() int { return len(mm.ids.msgs) }

// Get returns the message with the given id.
func (mm MessageMap) Get(id string) (*Message, bool) {
	i, ok := mm.ids.lookup(id)
	if !ok {
		return nil, false
	}
	return finishMapEntry(mm.ids.msgs[i]), true
}

// All yields every message by id, in input order.
func (mm MessageMap) All() iter.Seq2[string, *Message] {
	return func(yield func(string, *Message) bool) {
		for _, m := range mm.ids.msgs {
			if !yield(m.ID(), finishMapEntry(m)) {
				return
			}
		}
	}
}

// Map returns the messages as a plain Go map.
func (mm MessageMap) Map() map[string]*Message {
	out := make(map[string]*Message, len(mm.ids.msgs))
	for id, m := range mm.All() {
		out[id] = m
	}
	return out
}

// MarshalJSON writes the map as a JSON object keyed by id, in input order.
func (mm MessageMap) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256*len(mm.ids.msgs)+2)
	b = append(b, '{')
	first := true
	for id, m := range mm.All() {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, id)
		b = append(b, ':')
		enc, err := m.JSON()
		if err != nil {
			return nil, err
		}
		b = append(b, enc...)
	}
	return append(b, '}'), nil
}

// finishMapEntry applies the message-map display rules to one message,
// copying it only when something changes.
func finishMapEntry(m *Message) *Message {
	supervisor := m.Role() == "assistant" && m.flags&flagIsSupervisor != 0
	trim := !supervisor && m.flags&flagTrimMeta != 0
	if !supervisor && !trim {
		return m
	}
	f := m.object()
	if supervisor {
		f["role"] = "supervisor"
	}
	if trim {
		kept := map[string]any{}
		md, _ := f["metadata"].(map[string]any)
		for k, v := range md {
			if isUsagePerformanceField(k) {
				kept[k] = v
			}
		}
		if len(kept) > 0 {
			f["metadata"] = kept
		} else {
			delete(f, "metadata")
		}
	}
	return rebuild(f, m.ID())
}
