package conversation

// readSet records what a flat-list walk looked at: whose children it read,
// which ids it looked up in vain, and whether it read the list of roots or
// every message. A change that touches none of it leaves the flat list as
// it was, which lets Conversation skip the walk after most appends.
type readSet struct {
	kids   []bool // children (or raw children) of message p were read
	roots  bool   // the roots were read
	all    bool   // every message was scanned
	misses map[string]bool
}

func newReadSet(n int) *readSet { return &readSet{kids: make([]bool, n)} }

func (r *readSet) missed(id string) {
	if r.misses == nil {
		r.misses = map[string]bool{}
	}
	r.misses[id] = true
}
