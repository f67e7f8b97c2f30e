package conversation

import (
	"errors"
)

// The flat-list builder walks the active path of the conversation and emits
// what a chat UI renders, top to bottom: plain messages, plus virtual ones
// for assistant runs, compare columns, task fans and supervisor replies,
// with branch indicators on the messages that have alternatives.
//
// The reference writes this walk as mutual recursion, one level per message
// on the path. Here it runs on an explicit stack of frames, so the depth of
// a conversation costs heap, not goroutine stack. Each frame is the rest of
// one of the reference's loops; a step that would recurse pushes its own
// frame back (advanced past the current item) and then the frame of the
// callee, so the order of effects is the same.

// errWalkDiverged guards against a walk that stops making progress; it
// would mean a bug here, never an input the caller can fix.
var errWalkDiverged = errors.New("conversation: flat-list walk did not converge")

type frameKind uint8

const (
	frameVisit     frameKind = iota // start visiting the children of parent
	frameChildren                   // the main loop over children, from i
	frameTaskRest                   // after a task fan: remaining non-task children, from i
	frameTaskGrand                  // after a task fan: children of task list[i], from j
	frameContinue                   // after an assistant run: its unprocessed continuations
	frameRestore                    // put back the children of parent (see narrow)
)

type frame struct {
	kind   frameKind
	parent int32
	i, j   int32 // int32: a frame is journaled at every step (perf_flat_resume.go)
	list   []int32
	inner  []int32
}

// flatWalker builds the flat list.
type flatWalker struct {
	ix        *index
	col       *collector
	processed *markSet
	groupDone map[string]bool // message groups already shown
	out       []*Message
	stack     []frame
	err       error

	// step counts the steps of the walk from one; zero is the setup.
	step int32
	// log, when set, journals the walk so that it can resume after an
	// append (see perf_flat_resume.go); Parse walks without one.
	log *walkLog
	// reads records what the walk looked at (see readSet); nil for Parse.
	reads *readSet
	// shared is how many leading entries of out's array callers may hold
	// (see put).
	shared int
}

// newFlatWalker prepares a walk; size is the expected flat-list length, and
// processed, when not nil, is a set to reuse.
func newFlatWalker(ix *index, col *collector, size int, processed *markSet) *flatWalker {
	if processed == nil {
		processed = newDenseSet(len(ix.msgs))
	} else {
		processed.reset(len(ix.msgs))
	}
	return &flatWalker{
		ix:        ix,
		col:       col,
		processed: processed,
		out:       make([]*Message, 0, size),
	}
}

// emit appends an input message to the flat list, with the display rules of
// finishOriginal applied.
func (w *flatWalker) emit(i int32) { w.put(finishOriginal(w.ix.views, w.ix.msg(i))) }

// emitFields appends a message built here, with the display rules applied.
func (w *flatWalker) emitFields(f map[string]any) { w.put(finishVirtual(f)) }

func (w *flatWalker) mark(ids ...int32) {
	for _, i := range ids {
		w.processed.add(i)
	}
}

func (w *flatWalker) push(f frame) { w.stack = append(w.stack, f) }

// pushVisit schedules a visit of parent's children. A parent without
// children has nothing to visit, so nothing is pushed; it reports whether a
// frame was pushed.
func (w *flatWalker) pushVisit(parent int32) bool {
	if len(w.kidsOf(parent)) == 0 {
		return false
	}
	w.push(frame{kind: frameVisit, parent: parent})
	return true
}

// kidsOf returns the current children of a parent slot.
func (w *flatWalker) kidsOf(parent int32) []int32 {
	switch {
	case parent >= 0:
		return w.ix.kidsOf(parent)
	case parent == slotRoot:
		if r := w.ix.reads; r != nil {
			r.readRoots()
		}
		return w.ix.roots
	case parent == slotEmpty:
		return w.ix.emptyParent
	}
	return nil
}

// flatten walks from the roots, or, when every message has a parent (a
// thread loaded on its own), from the first message's parent.
func (w *flatWalker) flatten() error {
	if r := w.ix.reads; r != nil {
		r.step = 0
		r.readRoots()
	}
	start := slotRoot
	if len(w.ix.roots) == 0 && len(w.ix.msgs) > 0 {
		start = slotNowhere
		first := w.ix.msgs[0]
		if first.hasParent {
			if first.parentID() == "" {
				start = slotEmpty
			} else if p, ok := w.ix.lookup(first.parentID()); ok {
				start = p
			}
		}
	}
	w.pushVisit(start)
	return w.run()
}

// run takes steps until the stack is empty: each step runs the frame on
// top of the stack.
func (w *flatWalker) run() error {
	for len(w.stack) > 0 && w.err == nil {
		w.step++
		if r := w.ix.reads; r != nil {
			r.step = w.step
		}
		if w.log != nil {
			w.log.begin(w)
		}
		top := len(w.stack) - 1
		kind := w.stack[top].kind
		switch kind {
		case frameVisit:
			f := w.stack[top]
			w.stack = w.stack[:top]
			w.visit(f.parent)
		case frameChildren:
			w.children(top)
		case frameTaskRest:
			w.taskRest(top)
		case frameTaskGrand:
			w.taskGrand(top)
		case frameContinue:
			w.continueRun(top)
		case frameRestore:
			f := w.stack[top]
			w.stack = w.stack[:top]
			w.noteNarrow(f.parent)
			w.ix.restore(f.parent, f.list, f.j != 0)
		}
		if kind == frameChildren || kind == frameTaskRest || kind == frameTaskGrand {
			w.retire(top)
		}
	}
	return w.err
}

// retire drops the loop frame at top, below what its step pushed, once
// its list is done: it would only pop itself when back on top. Dropping it
// now is a tail call; it keeps a long path from piling up finished frames,
// which a resumed walk would otherwise have to rebuild. The loop frames
// pop themselves only when they return without pushing, so a frame still
// at top is the one that ran.
func (w *flatWalker) retire(top int) {
	if top >= len(w.stack) {
		return
	}
	if f := &w.stack[top]; int(f.i) < len(f.list) {
		return
	}
	copy(w.stack[top:], w.stack[top+1:])
	w.stack = w.stack[:len(w.stack)-1]
}

// visit starts on the children of parent: a fan of tasks first, else the
// main loop.
func (w *flatWalker) visit(parent int32) {
	kids := w.kidsOf(parent)
	if parent >= 0 && w.ix.msg(parent).ID() != "" && len(kids) > 0 {
		var tasks, rest []int32
		for _, k := range kids {
			if w.ix.msg(k).Role() == "task" {
				tasks = append(tasks, k)
			} else {
				rest = append(rest, k)
			}
		}
		if len(tasks) > 1 {
			role := "tasks"
			agents := map[key]bool{}
			for _, t := range tasks {
				if a := w.ix.msg(t).agentID(); a.truthy() {
					agents[a] = true
				}
			}
			if len(agents) > 1 {
				role = "groupTasks"
			}
			w.emitFields(w.tasksMessage(parent, tasks, role))
			w.push(frame{kind: frameTaskGrand, list: tasks})
			w.push(frame{kind: frameTaskRest, list: rest})
			return
		}
	}
	w.push(frame{kind: frameChildren, list: kids})
}

// taskRest handles the non-task children of a task fan (a summary, say).
func (w *flatWalker) taskRest(top int) {
	f := &w.stack[top]
	for int(f.i) < len(f.list) {
		k := f.list[f.i]
		f.i++
		if w.processed.has(k) {
			continue
		}
		if m := w.ix.msg(k); m.Role() == "assistant" && m.hasTools() {
			w.assistantRun(k, false)
			return
		}
		w.emit(k)
		w.mark(k)
		w.pushVisit(k)
		return
	}
	w.stack = w.stack[:top]
}

// taskGrand handles what hangs under the tasks of a fan (a summary written
// as a child of the last task).
func (w *flatWalker) taskGrand(top int) {
	f := &w.stack[top]
	for int(f.i) < len(f.list) {
		if f.j == 0 {
			f.inner = w.ix.kidsOf(f.list[f.i])
		}
		if int(f.j) >= len(f.inner) {
			f.i++
			f.j = 0
			continue
		}
		k := f.inner[f.j]
		f.j++
		if w.processed.has(k) {
			continue
		}
		m := w.ix.msg(k)
		switch {
		case m.Role() == "task":
			continue
		case m.Role() == "assistant" && m.hasTools():
			w.assistantRun(k, false)
		case m.Role() == "assistant" && m.flags&flagSupervisor != 0:
			w.emitFields(supervisorMessage(w.ix.views, m))
			w.mark(k)
			w.pushVisit(k)
		default:
			w.emit(k)
			w.mark(k)
			w.pushVisit(k)
		}
		return
	}
	w.stack = w.stack[:top]
}

// children is the main loop over the children of one parent.
func (w *flatWalker) children(top int) {
	ix := w.ix
	for {
		f := &w.stack[top]
		if int(f.i) >= len(f.list) {
			w.stack = w.stack[:top]
			return
		}
		k := f.list[f.i]
		f.i++
		if w.processed.has(k) {
			continue
		}
		m := ix.msg(k)

		// A compare group: its members become columns.
		if m.groupID() != "" {
			if g := ix.groups[m.groupID()]; g != nil && g.mode == "compare" && !w.groupShown(g.id.s) {
				var members []int32
				if ix.reads != nil {
					ix.reads.readAll()
				}
				for j, gm := range ix.msgs {
					if gm.groupID() == m.groupID() {
						members = append(members, int32(j))
					}
				}
				cmp := w.compareFromGroup(g, members)
				w.emitFields(cmp)
				w.mark(members...)
				w.markGroup(g.id.s)
				if active, ok := w.activeColumn(cmp); ok {
					w.pushVisit(active)
					return
				}
				continue
			}
		}

		// An assistant run, or the toolless narration that opens one.
		if m.Role() == "assistant" && (m.hasTools() || (m.flags&flagSupervisor == 0 && w.col.isToolChainHead(k))) {
			w.assistantRun(k, true)
			return
		}

		// A supervisor's reply without tools.
		if m.Role() == "assistant" && m.flags&flagSupervisor != 0 {
			w.emitFields(supervisorMessage(w.ix.views, m))
			w.mark(k)
			w.pushVisit(k)
			return
		}

		kids := ix.kidsOf(k)
		var nonTool []int32
		for _, c := range kids {
			if ix.msg(c).Role() != "tool" {
				nonTool = append(nonTool, c)
			}
		}

		// Compare mode flagged on the message: its children are the columns.
		if m.flags&flagCompare != 0 && len(kids) > 1 {
			w.emit(k)
			w.mark(k)
			cmp := w.compareFromChildren(k, kids)
			w.emitFields(cmp)
			if active, ok := w.activeColumn(cmp); ok {
				w.pushVisit(active)
			}
			return
		}

		// A branch point: the indicator goes on the active child.
		if (m.Role() == "user" || m.Role() == "assistant") && len(nonTool) > 1 {
			ch := activeBranch(m, nonTool, func(c int32) bool { return len(ix.kidsOf(c)) > 0 })
			w.emit(k)
			w.mark(k)
			if ch.optimistic {
				continue
			}
			a := nonTool[ch.pos]
			am := ix.msg(a)
			if m.Role() == "user" && am.Role() == "assistant" && am.hasTools() {
				chain, tools := w.col.collectAssistantChain(a, w.processed)
				group := w.groupFields(chain, tools)
				w.emitFields(withBranch(group, len(nonTool), ch.pos))
				w.mark(chain...)
				w.mark(tools...)
				w.pushContinue(chain, tools)
				return
			}
			w.emitFields(withBranch(w.ix.views.view(am), len(nonTool), ch.pos))
			w.mark(a)
			w.pushVisit(a)
			return
		}

		w.emit(k)
		w.mark(k)
		if w.pushVisit(k) {
			return
		}
	}
}

// groupShown and markGroup track message groups already emitted. A group id
// that is also a message id counts as that message too, as one set of ids
// does in the reference.
func (w *flatWalker) groupShown(id string) bool {
	if w.groupDone[id] {
		return true
	}
	if i, ok := w.ix.lookup(id); ok {
		return w.processed.has(i)
	}
	return false
}

func (w *flatWalker) markGroup(id string) {
	if w.groupDone == nil {
		w.groupDone = map[string]bool{}
	}
	if !w.groupDone[id] {
		w.groupDone[id] = true
		if w.log != nil {
			w.log.groups = append(w.log.groups, id)
		}
	}
	if i, ok := w.ix.lookup(id); ok {
		w.processed.add(i)
	}
}

// activeColumn returns the message of a compare message's active column.
func (w *flatWalker) activeColumn(cmp map[string]any) (int32, bool) {
	id, ok := cmp["activeColumnId"].(string)
	if !ok || id == "" {
		return 0, false
	}
	return w.ix.lookup(id)
}

// assistantRun emits the run starting at assistant a, with its signal
// replies and council when full is set (the main loop), without them for a
// run reached from a task fan. It schedules the council members' replies
// and the run's continuations.
func (w *flatWalker) assistantRun(a int32, full bool) {
	chain, tools := w.col.collectAssistantChain(a, w.processed)
	var blocks []signalBlock
	var completions []int32
	if full {
		blocks = w.col.collectFlatSignalCallbacks(tools)
		completions = w.col.collectFlatTaskCompletions(tools)
	}
	memberIDs, members := w.councilMembers(tools)
	if cache := w.ix.runs; cache != nil && len(members) == 0 && len(chain) > 0 {
		w.put(cache.get(w, chain, tools, blocks, completions).message())
	} else {
		w.emitFields(w.assistantGroupMessage(chain, tools, blocks, completions, members))
	}
	w.mark(chain...)
	w.mark(tools...)
	for _, b := range blocks {
		w.mark(b.callbacks...)
	}
	w.mark(completions...)
	w.pushContinue(chain, tools)
	for i := len(memberIDs) - 1; i >= 0; i-- {
		w.pushVisit(memberIDs[i])
	}
}

// pushContinue schedules the continuations of a run: what hangs under its
// last assistant or any of its tools.
func (w *flatWalker) pushContinue(chain, tools []int32) {
	parents := make([]int32, 0, len(tools)+1)
	if len(chain) > 0 {
		parents = append(parents, chain[len(chain)-1])
	}
	parents = append(parents, tools...)
	w.push(frame{kind: frameContinue, list: parents})
}

// continueRun takes the earliest unprocessed child under the run's parents
// and walks it; a council or task fan under one parent is walked whole.
func (w *flatWalker) continueRun(top int) {
	f := &w.stack[top]
	// Every other frame advances an index; this one relies on each visit
	// processing the child it was started for. Check it, so that a bug can
	// only end the walk with an error, never loop.
	if f.j > 0 && !w.processed.has(f.j-1) {
		w.err = errWalkDiverged
		return
	}
	child, parent, left := w.nextUnprocessedChild(f.list)
	if left == 0 {
		w.stack = w.stack[:top]
		return
	}
	f.j = child + 1
	if w.shouldDrain(parent) {
		w.pushVisit(parent)
		return
	}
	if left == 1 {
		// Once this child is walked the frame would find nothing left and
		// pop: a tail call, as in retire. (Children lists do not change
		// during a walk and processed only grows.)
		w.stack = w.stack[:top]
	}
	if kids := w.ix.kidsOf(parent); len(kids) == 1 && kids[0] == child {
		// Narrowing to the only child would change nothing.
		w.pushVisit(parent)
		return
	}
	// Walk only this child under its parent: narrow the parent's children
	// for the duration of the visit, then restore them.
	w.noteNarrow(parent)
	prev, had := w.ix.narrow(parent, child)
	hadPrev := int32(0)
	if had {
		hadPrev = 1
	}
	w.push(frame{kind: frameRestore, parent: parent, list: prev, j: hadPrev})
	w.pushVisit(parent)
}

// nextUnprocessedChild returns the earliest unprocessed child under
// parents, and how many unprocessed children there are (a child listed
// twice counts twice).
func (w *flatWalker) nextUnprocessedChild(parents []int32) (child, parent int32, left int) {
	best := 0.0
	for _, p := range parents {
		for _, c := range w.ix.kidsOf(p) {
			if w.processed.has(c) {
				continue
			}
			at := w.ix.msg(c).createdAt
			if left == 0 || at < best {
				child, parent, best = c, p, at
			}
			left++
		}
	}
	return child, parent, left
}

func (w *flatWalker) shouldDrain(p int32) bool {
	var left []int32
	for _, c := range w.ix.kidsOf(p) {
		if !w.processed.has(c) {
			left = append(left, c)
		}
	}
	if len(left) <= 1 {
		return false
	}
	if w.ix.msg(p).flags&flagCouncil != 0 {
		return true
	}
	tasks := 0
	for _, c := range left {
		if w.ix.msg(c).Role() == "task" {
			tasks++
		}
	}
	return tasks > 1
}

// councilMembers gathers the members of a broadcast run: the non-tool
// siblings of its council tool, else the tool's own non-tool children. The
// tool's other children are bookkeeping anchors and are marked processed.
func (w *flatWalker) councilMembers(tools []int32) (ids []int32, members []any) {
	ix := w.ix
	council := int32(-1)
	for _, t := range tools {
		if ix.msg(t).flags&flagCouncil != 0 {
			council = t
			break
		}
	}
	if council < 0 {
		return nil, nil
	}
	pick := func(kids []int32) []int32 {
		var out []int32
		for _, k := range kids {
			if ix.msg(k).Role() != "tool" && !w.processed.has(k) {
				out = append(out, k)
			}
		}
		return out
	}
	cm := ix.msg(council)
	if cm.hasParent && cm.parentID() != "" {
		if s, ok := ix.lookup(cm.parentID()); ok {
			ids = pick(ix.kidsOf(s))
		}
	}
	if len(ids) <= 1 {
		ids = pick(ix.kidsOf(council))
	}
	if len(ids) <= 1 {
		return nil, nil
	}
	members = w.columnsOf(ids)
	w.mark(ix.kidsOf(council)...)
	return ids, members
}

// columnsOf renders each of ids as one entry: an assistant with tools as its
// whole run, anything else as itself. Each run is collected on its own, so
// runs may share messages.
func (w *flatWalker) columnsOf(ids []int32) []any {
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		m := w.ix.msg(id)
		if m.Role() == "assistant" && m.hasTools() {
			chain, tools := w.col.collectAssistantChain(id, newSparseSet())
			out = append(out, w.groupFields(chain, tools))
			w.mark(chain...)
			w.mark(tools...)
			continue
		}
		out = append(out, w.ix.views.view(m))
		w.mark(id)
	}
	return out
}

// compareFromChildren builds the compare message whose columns are the
// children of message p.
func (w *flatWalker) compareFromChildren(p int32, kids []int32) map[string]any {
	out := map[string]any{"content": "", "role": "compare"}
	ids := make([]string, 0, len(kids))
	for _, k := range kids {
		km := w.ix.msg(k)
		ids = append(ids, km.ID())
		if km.flags&flagActiveColumn != 0 {
			out["activeColumnId"] = km.ID()
		}
	}
	cols := w.columnsOf(kids)
	for i, c := range cols {
		cols[i] = []any{c}
	}
	pid := w.ix.msg(p).ID()
	out["columns"] = cols
	out["id"] = "compare-" + pid + "-" + joinIDs(ids)
	out["extra"] = map[string]any{"parentMessageId": pid}
	out["createdAt"], out["updatedAt"] = w.spanOf(kids)
	return out
}

func joinIDs(ids []string) string {
	n := 0
	for _, s := range ids {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for i, s := range ids {
		if i > 0 {
			b = append(b, '-')
		}
		b = append(b, s...)
	}
	return string(b)
}

// groupFields builds (or takes from the run cache) the virtual message of a
// run without signal blocks, completions or council. The map is shared with
// the cache: callers must not change it.
func (w *flatWalker) groupFields(chain, tools []int32) map[string]any {
	if cache := w.ix.runs; cache != nil && len(chain) > 0 {
		return cache.get(w, chain, tools, nil, nil).fields
	}
	return w.assistantGroupMessage(chain, tools, nil, nil, nil)
}
