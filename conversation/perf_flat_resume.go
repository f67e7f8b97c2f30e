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

// resumeKeep is how many steps of a finished walk stay journaled (a
// conversation keeps them between appends): an append that touches an
// older step walks again from the start. Appends at the end of the active
// path rewind a few steps (at most 4 in a chain, TestResumeChain). At 8
// rather than 16, 4,330 instead of 4,362 flat lists of the corpus tails
// came from a resumed walk (TestResumeCorpusTail), and a live conversation
// held about 0.9 KB less, journal records being about 80 bytes each
// (BENCHMARKS.md).
const resumeKeep = 8

// stepRecord is the state a step started from, for what the step may change.
type stepRecord struct {
	top    frame // the frame on top of the stack
	height int32 // the stack's height
	out    int32 // the flat list's length
	marks  int32 // the processed set's journal length
	groups int32 // walkLog.groups length
}

// narrowUndo is what ix.narrowed[p] was (had: present) before step changed
// it. A step changes at most one parent's override.
type narrowUndo struct {
	step int32
	p    int32
	had  bool
	prev []int32
}

// walkLog is the journal of a walk's last steps.
type walkLog struct {
	keep    int // steps kept journaled after the walk (resumeKeep)
	recs    []stepRecord
	base    int32 // the step of recs[0]
	narrows []narrowUndo
	groups  []string // message groups shown, in order
}

// journaled prepares w, before its walk, to keep a journal of its last keep
// steps.
func (w *flatWalker) journaled(keep int) {
	keep = max(keep, 1)
	// A walk of a chain takes two steps a message, and the journal holds at
	// most 2*keep records: sized once, it does not grow by doubling.
	w.log = &walkLog{base: 1, keep: keep, recs: make([]stepRecord, 0, min(2*keep, 2*len(w.ix.msgs)+2))}
	w.processed.journal = &markJournal{}
}

// begin records the state the step under way starts from.
func (l *walkLog) begin(w *flatWalker) {
	if len(l.recs) >= 2*l.keep {
		l.trim(w.processed)
	}
	top := len(w.stack) - 1
	l.recs = append(l.recs, stepRecord{
		top:    w.stack[top],
		height: int32(top + 1),
		out:    int32(len(w.out)),
		marks:  int32(len(w.processed.journal.ids)),
		groups: int32(len(l.groups)),
	})
}

// trim keeps the last keep steps' records and the marks they may undo.
func (l *walkLog) trim(processed *markSet) {
	drop := len(l.recs) - l.keep
	if drop <= 0 {
		return
	}
	n := copy(l.recs, l.recs[drop:])
	clear(l.recs[n:]) // the dropped frames' lists may go
	l.recs = l.recs[:n]
	l.base += int32(drop)
	// Marks made before the oldest step kept are never taken back.
	j := processed.journal
	cut := l.recs[0].marks
	m := copy(j.ids, j.ids[cut:])
	j.ids = j.ids[:m]
	for i := range l.recs {
		l.recs[i].marks -= cut
	}
	k := 0
	for k < len(l.narrows) && l.narrows[k].step < l.base {
		k++
	}
	m = copy(l.narrows, l.narrows[k:])
	clear(l.narrows[m:])
	l.narrows = l.narrows[:m]
}

// noteNarrow records, before the step under way changes ix.narrowed[p],
// what it was. A step changes at most one parent's override.
func (w *flatWalker) noteNarrow(p int32) {
	if w.log == nil {
		return
	}
	prev, had := w.ix.narrowed[p]
	w.log.narrows = append(w.log.narrows, narrowUndo{step: w.step, p: p, had: had, prev: prev})
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
		w.processed.unmarkTo(int(r.marks))
		for len(l.groups) > int(r.groups) {
			delete(w.groupDone, l.groups[len(l.groups)-1])
			l.groups = l.groups[:len(l.groups)-1]
		}
		step := l.base + int32(n-1)
		for k := len(l.narrows) - 1; k >= 0 && l.narrows[k].step >= step; k-- {
			u := l.narrows[k]
			if u.had {
				if w.ix.narrowed == nil {
					w.ix.narrowed = make(map[int32][]int32)
				}
				w.ix.narrowed[u.p] = u.prev
			} else {
				delete(w.ix.narrowed, u.p)
			}
			l.narrows[k] = narrowUndo{}
			l.narrows = l.narrows[:k]
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
	l := w.log
	l.trim(w.processed)
	// The journal stays with its conversation: after a long walk it holds
	// keep records in room for 2*keep. Appends resume a few steps at a
	// time, so a little room above keep is enough.
	if room := l.keep + l.keep/4 + 2; cap(l.recs) > room {
		recs := make([]stepRecord, len(l.recs), room)
		copy(recs, l.recs)
		l.recs = recs
	}
}

// markJournal lists the positions added to a dense markSet, in order. It
// sits behind a pointer so that add, which appends to it, does not make
// every set it is called on (a sparse set on the stack) escape.
type markJournal struct{ ids []int32 }

// unmarkTo takes back the journaled marks after the first n.
func (s *markSet) unmarkTo(n int) {
	ids := s.journal.ids
	for k := len(ids) - 1; k >= n; k-- {
		s.stamp[ids[k]] = 0
	}
	s.journal.ids = ids[:n]
}

// grow makes room in a dense set for n positions, keeping its marks.
func (s *markSet) grow(n int) {
	if n > len(s.stamp) {
		s.stamp = append(s.stamp, make([]uint32, n-len(s.stamp)+n/4)...)
	}
}
