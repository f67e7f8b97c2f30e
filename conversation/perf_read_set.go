package conversation

// readSet records what a flat-list walk looked at, and at which step of the
// walk it first did: whose children it read, which ids it looked up in vain,
// and whether it read the list of roots or scanned every message. A change
// that touches none of it leaves the flat list as it was, which lets
// Conversation skip the walk after most appends; a change that touches it
// leaves the walk as it was up to the first step that looked, which lets
// Conversation resume the walk from there (see perf_flat_resume.go).
//
// Steps are stored plus one, so that zero means "never looked".
type readSet struct {
	kids   []int32 // children (or raw children) of message p
	roots  int32   // the list of roots
	all    int32   // every message (a scan for compare-group members)
	misses map[string]int32
	step   int32 // the step under way, set by the walk
}

func newReadSet(n int) *readSet { return &readSet{kids: make([]int32, n)} }

// earliest returns the earlier of two recorded steps, either of which may
// be zero (never).
func earliest(a, b int32) int32 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// readKids records a read of the children of message p.
func (r *readSet) readKids(p int32) { r.kids[p] = earliest(r.kids[p], r.step+1) }

// readRoots records a read of the roots.
func (r *readSet) readRoots() { r.roots = earliest(r.roots, r.step+1) }

// readAll records a scan of every message.
func (r *readSet) readAll() { r.all = earliest(r.all, r.step+1) }

func (r *readSet) missed(id string) {
	if r.misses == nil {
		r.misses = map[string]int32{}
	}
	r.misses[id] = earliest(r.misses[id], r.step+1)
}

// touched returns the first step (plus one) that looked where a message
// with the given id, appended under parent slot, lands; zero when none did.
// A parent appended after the walk cannot have been looked at.
func (r *readSet) touched(slot int32, id string) int32 {
	at := r.all
	switch {
	case slot >= 0 && int(slot) < len(r.kids):
		at = earliest(at, r.kids[slot])
	case slot < 0:
		at = earliest(at, r.roots)
	}
	if r.misses != nil {
		at = earliest(at, r.misses[id])
	}
	return at
}

// grow makes room for the messages appended since the walk.
func (r *readSet) grow(n int) {
	if n > len(r.kids) {
		r.kids = append(r.kids, make([]int32, n-len(r.kids)+n/4)...)
	}
}
