package conversation

// Resuming a flat-list walk. In a live conversation nearly every append
// lands at the end of the active path, where the last walk looked, so the
// flat list must be walked again; but only from the first step of the walk
// that looked where the message lands (the read set records it): every
// step before that read only what the append left as it was, so it would
// do the same again. The walk therefore journals, for each of its last
// steps, what the step changed (the frame on top of the stack and the
// stack's height, the flat list's length, the processed and group marks,
// a narrowed parent), and Conversation rewinds the finished walk to that
// step and runs it on. The result is the full walk's, at the cost of the
// rewound steps.
//
// Only the frame on top changes in a step (a step may pop it, change it
// and push frames above it), so the top frame and the height at the start
// of each step are enough to put the stack back, undoing the steps last
// first: every frame below the top is restored by the later step that had
// it on top, and a finished walk has had every frame on top.

// resumeKeep is how many steps of a finished walk stay journaled: an append
// that touches an older step walks again from the start. Appends at the end
// of the active path rewind a few steps.
const resumeKeep = 64

// stepRecord is the state a step started from, for what the step may change.
type stepRecord struct {
	top    frame // the frame on top of the stack
	height int32 // the stack's height
	out    int32 // the flat list's length
	marks  int   // processed journal length (absolute, see walkLog.markBase)
	groups int32 // walkLog.groups length
	// narrowed tells that the step changed ix.narrowed[narrowP], which was
	// narrowPrev (narrowHad: present).
	narrowed   bool
	narrowHad  bool
	narrowP    int32
	narrowPrev []int32
}

// walkLog is the journal of a walk's last steps.
type walkLog struct {
	recs     []stepRecord
	base     int32 // the step of recs[0]
	markBase int   // how many journaled marks were dropped from the front
	groups   []string
}

// journaled prepares w, before its walk, to keep a journal.
func (w *flatWalker) journaled() {
	w.log = &walkLog{base: 1}
	w.processed.journaling = true
}

// begin records the state the step under way starts from.
func (l *walkLog) begin(w *flatWalker) {
	if len(l.recs) >= 2*resumeKeep {
		l.trim(w.processed, resumeKeep)
	}
	top := len(w.stack) - 1
	l.recs = append(l.recs, stepRecord{
		top:    w.stack[top],
		height: int32(top + 1),
		out:    int32(len(w.out)),
		marks:  l.markBase + len(w.processed.journal),
		groups: int32(len(l.groups)),
	})
}

// trim keeps the last keep steps' records and the marks they may undo.
func (l *walkLog) trim(processed *markSet, keep int) {
	drop := len(l.recs) - keep
	if drop <= 0 {
		return
	}
	n := copy(l.recs, l.recs[drop:])
	clear(l.recs[n:]) // the dropped frames' lists may go
	l.recs = l.recs[:n]
	l.base += int32(drop)
	cut := l.recs[0].marks - l.markBase
	m := copy(processed.journal, processed.journal[cut:])
	processed.journal = processed.journal[:m]
	l.markBase += cut
}

// noteNarrow records, before the step under way changes ix.narrowed[p],
// what it was. A step changes at most one parent's override.
func (w *flatWalker) noteNarrow(p int32) {
	if w.log == nil || len(w.log.recs) == 0 {
		return
	}
	r := &w.log.recs[len(w.log.recs)-1]
	r.narrowed, r.narrowP = true, p
	r.narrowPrev, r.narrowHad = w.ix.narrowed[p]
}

// put appends m to the flat list. A resumed walk writes over the entries of
// the flat list it returned before, which callers may hold: an entry that
// would change there moves the list to a new array first.
func (w *flatWalker) put(m *Message) {
	n := len(w.out)
	if n < w.shared {
		if w.out[:n+1][n] == m {
			w.out = w.out[:n+1]
			return
		}
		fresh := make([]*Message, n, cap(w.out))
		copy(fresh, w.out)
		w.out, w.shared = fresh, 0
	}
	w.out = append(w.out, m)
}

// rewind undoes the steps of a finished walk from step s on, so that run
// takes step s again. It reports false, changing nothing, when the journal
// does not reach back to s.
func (w *flatWalker) rewind(s int32) bool {
	l := w.log
	if l == nil || w.err != nil || len(w.stack) != 0 || s < l.base || s >= l.base+int32(len(l.recs)) {
		return false
	}
	for n := len(l.recs); n > 0 && l.base+int32(n-1) >= s; n = len(l.recs) {
		r := &l.recs[n-1]
		h := int(r.height)
		for len(w.stack) < h {
			w.stack = append(w.stack, frame{})
		}
		w.stack = w.stack[:h]
		w.stack[h-1] = r.top
		w.out = w.out[:r.out]
		w.processed.unmarkTo(r.marks - l.markBase)
		for len(l.groups) > int(r.groups) {
			delete(w.groupDone, l.groups[len(l.groups)-1])
			l.groups = l.groups[:len(l.groups)-1]
		}
		if r.narrowed {
			if r.narrowHad {
				if w.ix.narrowed == nil {
					w.ix.narrowed = make(map[int32][]int32)
				}
				w.ix.narrowed[r.narrowP] = r.narrowPrev
			} else {
				delete(w.ix.narrowed, r.narrowP)
			}
		}
		*r = stepRecord{}
		l.recs = l.recs[:n-1]
	}
	w.step = s - 1
	return true
}

// resume rewinds a finished walk to step s and runs it on over the index
// as it is now. It reports false, changing nothing, when it cannot.
func (w *flatWalker) resume(s int32) (bool, error) {
	if !w.rewind(s) {
		return false, nil
	}
	n := len(w.ix.msgs)
	w.reads.grow(n)
	w.processed.grow(n)
	w.ix.reads = w.reads
	defer func() { w.ix.reads = nil }()
	if err := w.run(); err != nil {
		return true, err
	}
	w.finish()
	return true, nil
}

// finish ends a journaled walk: the flat list is handed out, and only the
// last steps stay journaled.
func (w *flatWalker) finish() {
	w.shared = max(w.shared, len(w.out))
	w.log.trim(w.processed, resumeKeep)
}

// unmarkTo takes back the journaled marks after the first n.
func (s *markSet) unmarkTo(n int) {
	for j := len(s.journal) - 1; j >= n; j-- {
		s.stamp[s.journal[j]] = 0
	}
	s.journal = s.journal[:n]
}

// grow makes room in a dense set for n positions, keeping its marks.
func (s *markSet) grow(n int) {
	if n > len(s.stamp) {
		s.stamp = append(s.stamp, make([]uint32, n-len(s.stamp)+n/4)...)
	}
}
