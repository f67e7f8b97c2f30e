package conversation

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// FindingKind names a shape of message tree that leaves messages where a
// user cannot (or can no longer properly) see them.
type FindingKind string

// The kinds Diagnose reports.
const (
	// KindSegmentSplit: a user turn was written with no parent (or one that
	// never arrived), so a later section of the conversation starts a second
	// root: shown, but out of order and cut off from the history before it.
	KindSegmentSplit FindingKind = "segment-split"
	// KindConcurrentFork: a user turn was written while a run was still
	// writing, so both hang off one message and the reader follows one.
	KindConcurrentFork FindingKind = "concurrent-fork"
	// KindOrphanSignalTurn: a signal callback turn hangs off an assistant
	// instead of the tool result that triggered it, and is dropped.
	KindOrphanSignalTurn FindingKind = "orphan-signal-turn"
	// KindStaleBranchIndex: metadata.activeBranchIndex points past every
	// branch (a regenerate that never landed), so no branch is shown.
	KindStaleBranchIndex FindingKind = "stale-branch-index"
	// KindLostContent: a chain of assistant rows that were created but
	// never filled in. Nothing can bring the text back; it is reported only.
	KindLostContent FindingKind = "lost-content"
	// KindParentCycle: messages whose parentIds lead back to themselves,
	// which Parse drops with everything under them.
	KindParentCycle FindingKind = "parent-cycle"
)

// Finding is one defect Diagnose attributes to a known shape.
type Finding struct {
	Kind FindingKind `json:"kind"`
	// MessageID is where the defect sits: the stranded root, the forked
	// parent, the signal turn, the parent with the stale index, or the head
	// of the lost chain.
	MessageID string `json:"messageId"`
	// HiddenMessageIDs are the messages the reader does not show because of
	// the defect, in time order. Empty for segment-split and lost-content.
	HiddenMessageIDs []string `json:"hiddenMessageIds"`
	// ReattachedMessageIDs (segment-split) is the stranded section the
	// repair joins back to the conversation.
	ReattachedMessageIDs []string `json:"reattachedMessageIds,omitempty"`
	// LostMessageIDs (lost-content) is the chain of empty rows.
	LostMessageIDs []string `json:"lostMessageIds,omitempty"`
	// Explanation says in a sentence what went wrong.
	Explanation string `json:"explanation"`
	// Repairable reports whether Repair is set.
	Repairable bool `json:"repairable"`
	// Repair is the change that puts the messages back, or nil.
	Repair *Repair `json:"repair,omitempty"`
}

// Diagnosis is what Diagnose found.
type Diagnosis struct {
	// HiddenCount is the number of distinct messages the findings hide.
	HiddenCount int `json:"hiddenCount"`
	// Findings in the order the checks run: parent cycles, segment splits,
	// concurrent forks, orphan signal turns, stale branch indexes, lost
	// content.
	Findings []Finding `json:"findings"`
}

// Healthy reports whether nothing was found.
func (d *Diagnosis) Healthy() bool { return len(d.Findings) == 0 }

// Repairs returns the repairs of the findings, in order.
func (d *Diagnosis) Repairs() []Repair {
	out := []Repair{}
	for _, f := range d.Findings {
		if f.Repair != nil {
			out = append(out, *f.Repair)
		}
	}
	return out
}

// Diagnose finds the messages of a conversation that a user cannot see, and
// proposes repairs. It follows upstream doctor/diagnose.ts: what Parse
// leaves out of the flat list is only a candidate (the discarded side of a
// regenerate is hidden on purpose), so each candidate must be explained by
// one of the known defect shapes to be reported, and a defect whose
// messages Parse still shows, or which would restore nothing but blanks, is
// left alone. Thread messages are not examined. Diagnose reads its input
// and never changes it; opts are passed to Parse.
func Diagnose(messages []*Message, groups []*MessageGroup, opts ...Option) (*Diagnosis, error) {
	res, err := Parse(messages, groups, opts...)
	if err != nil {
		return nil, err
	}
	rendered := make(map[string]bool)
	for _, m := range res.FlatList {
		collectRenderedIDs(m, rendered)
	}
	d := newDoctor(messages, rendered)
	d.parentCycles()
	d.segmentSplits()
	d.concurrentForks()
	d.orphanSignalTurns()
	d.staleBranchIndexes()
	d.lostContent()
	return &Diagnosis{HiddenCount: len(d.hidden), Findings: d.findings}, nil
}

// collectRenderedIDs adds every string under the keys that name a message
// (id, result_msg_id, sourceToolMessageId), at any depth of a rendered
// value. Walking generically rather than naming each place a message nests
// (tool results, signal callbacks, task completions…) keeps a new nesting
// from showing up as hidden messages; ids that are not messages fall out
// when looked up among the conversation's ids.
func collectRenderedIDs(v any, out map[string]bool) {
	stack := []any{v}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch t := v.(type) {
		case *Message:
			if t != nil {
				stack = append(stack, t.Fields())
			}
		case []*Message:
			for _, m := range t {
				stack = append(stack, m)
			}
		case []any:
			stack = append(stack, t...)
		case map[string]any:
			for _, k := range [...]string{"id", "result_msg_id", "sourceToolMessageId"} {
				if s, ok := t[k].(string); ok {
					out[s] = true
				}
			}
			for _, x := range t {
				switch x.(type) {
				case map[string]any, []any, *Message, []*Message:
					stack = append(stack, x)
				}
			}
		}
	}
}

// dmsg is what the doctor reads of one message.
type dmsg struct {
	id, role, parent string // parent: "" for none
	at               float64
	pos              int // in doctor.sorted
	fields           map[string]any
	substance        bool // hasSubstance
	anchor           bool // canAnchor

	// Of the subtree under the message (see doctor.summarize): the span of
	// its times (NaN when one is not a number), and whether it holds a
	// message Parse hides that would show something.
	lo, hi  float64
	dropped bool
}

// doctor holds the main-flow messages in time order, the links between
// them and the findings so far.
type doctor struct {
	sorted   []*dmsg
	byID     map[string]*dmsg
	children map[string][]*dmsg
	parents  []string // the keys of children, in the order first met
	rendered map[string]bool
	findings []Finding
	hidden   map[string]bool
	subtrees map[string][]*dmsg // subtree results, by root id
}

func newDoctor(messages []*Message, rendered map[string]bool) *doctor {
	d := &doctor{
		byID:     make(map[string]*dmsg),
		children: make(map[string][]*dmsg),
		rendered: rendered,
		hidden:   make(map[string]bool),
		subtrees: make(map[string][]*dmsg),
	}
	// A message written after a compression names the last message hidden
	// in the compressed group as its parent; Parse puts it under the group.
	redirect := map[string]string{}
	for _, m := range messages {
		if m.inThread {
			continue
		}
		f := m.Fields()
		pid, _ := f["parentId"].(string)
		dm := &dmsg{id: m.ID(), role: m.Role(), parent: pid, at: m.createdAt, fields: f}
		dm.substance = dm.hasSubstance()
		dm.anchor = dm.canAnchor()
		if dm.role == "compressedGroup" {
			if last, ok := lastCompressedID(f); ok && last != "" {
				redirect[last] = dm.id
			}
		}
		d.sorted = append(d.sorted, dm)
	}
	// Stable, and NaN equal to everything: as upstream's
	// `toTime(a) - toTime(b)` comparator sorts.
	slices.SortStableFunc(d.sorted, func(a, b *dmsg) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	for i, m := range d.sorted {
		m.pos = i
		d.byID[m.id] = m // the last of a repeated id wins, as in a JavaScript Map
	}
	for _, m := range d.sorted {
		if _, ok := d.byID[m.parent]; !ok && m.parent != "" {
			if g, ok := redirect[m.parent]; ok {
				m.parent = g
			}
		}
		if _, ok := d.byID[m.parent]; !ok || m.parent == "" {
			continue
		}
		if _, seen := d.children[m.parent]; !seen {
			d.parents = append(d.parents, m.parent)
		}
		d.children[m.parent] = append(d.children[m.parent], m)
	}
	d.summarize()
	return d
}

// summarize sets lo, hi and dropped of every message from its subtree, in
// one post-order walk, so that the checks materialise a subtree only where
// a finding is possible: on a long conversation with many branch points,
// collecting the subtree of each would be quadratic (BenchmarkDiagnose). A
// child met again while its own walk is in progress (a parent cycle) adds
// nothing.
func (d *doctor) summarize() {
	const (
		unseen = iota
		open
		done
	)
	state := make(map[*dmsg]uint8, len(d.sorted))
	type frame struct {
		m    *dmsg
		next int // the next child to visit
	}
	var stack []frame
	for _, start := range d.sorted {
		if state[start] != unseen {
			continue
		}
		stack = append(stack[:0], frame{m: start})
		state[start] = open
		start.lo, start.hi = start.at, start.at
		start.dropped = start.substance && !d.rendered[start.id]
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			kids := d.children[top.m.id]
			if top.next < len(kids) {
				c := kids[top.next]
				top.next++
				if state[c] == unseen {
					state[c] = open
					c.lo, c.hi = c.at, c.at
					c.dropped = c.substance && !d.rendered[c.id]
					stack = append(stack, frame{m: c})
				}
				continue
			}
			m := top.m
			state[m] = done
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				p := stack[len(stack)-1].m
				p.lo, p.hi = spanMin(p.lo, m.lo), spanMax(p.hi, m.hi)
				p.dropped = p.dropped || m.dropped
			}
		}
	}
}

// spanMin and spanMax combine span ends as Math.min and Math.max do: NaN
// wins.
func spanMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return min(a, b)
}

func spanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return max(a, b)
}

// parentCycles reports each cycle of parentIds (a message its own
// ancestor): Parse drops its messages, so a conversation holding one is
// not healthy. Nothing says which link is wrong, so there is no repair;
// the explanation names the cycle for a person to break.
func (d *doctor) parentCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[*dmsg]uint8, len(d.sorted))
	var path []*dmsg
	for _, start := range d.sorted {
		path = path[:0]
		m := start
		for m != nil && state[m] == unseen {
			state[m] = onPath
			path = append(path, m)
			m = d.byID[m.parent]
		}
		if m != nil && state[m] == onPath { // the walk came back to m
			i := slices.Index(path, m)
			cycle := slices.Clone(path[i:])
			slices.SortFunc(cycle, func(a, b *dmsg) int { return a.pos - b.pos })
			var hidden []string
			for _, c := range cycle {
				if !d.rendered[c.id] {
					hidden = append(hidden, c.id)
				}
			}
			d.report(Finding{
				Kind:             KindParentCycle,
				MessageID:        cycle[0].id,
				HiddenMessageIDs: hidden,
				Explanation: fmt.Sprintf("the parentIds of %s lead back to themselves, so none of them has a root: the reader drops them and everything under them; set one of their parentIds to a message outside the cycle",
					strings.Join(ids(cycle), ", ")),
			})
		}
		for _, p := range path {
			state[p] = done
		}
	}
}

func (d *doctor) report(f Finding) {
	f.Repairable = f.Repair != nil
	if f.HiddenMessageIDs == nil {
		f.HiddenMessageIDs = []string{}
	}
	for _, id := range f.HiddenMessageIDs {
		d.hidden[id] = true
	}
	d.findings = append(d.findings, f)
}

// subtree returns root and everything under it, in time order. The result
// is shared between callers: it must not be changed.
func (d *doctor) subtree(root string) []*dmsg {
	if out, ok := d.subtrees[root]; ok {
		return out
	}
	var out []*dmsg
	seen := map[string]bool{}
	stack := []string{root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		if m, ok := d.byID[id]; ok {
			out = append(out, m)
		}
		for _, c := range d.children[id] {
			stack = append(stack, c.id)
		}
	}
	d.timeOrder(out)
	d.subtrees[root] = out
	return out
}

// timeOrder sorts msgs as d.sorted orders them.
func (d *doctor) timeOrder(msgs []*dmsg) {
	slices.SortFunc(msgs, func(a, b *dmsg) int { return a.pos - b.pos })
}

// restorable returns the hidden ones among msgs in time order, or none
// when not one of them carries anything a user would see: restoring blanks
// is no repair.
func (d *doctor) restorable(msgs []*dmsg) []string {
	var hidden []*dmsg
	seen := make(map[*dmsg]bool, len(msgs))
	worth := false
	for _, m := range msgs {
		if !d.rendered[m.id] && !seen[m] {
			seen[m] = true
			hidden = append(hidden, m)
			worth = worth || m.substance
		}
	}
	if !worth {
		return nil
	}
	d.timeOrder(hidden)
	return ids(hidden)
}

// latestAnchor returns the newest message of msgs, which are in time
// order, that can take a turn after it (see canAnchor), or nil. Among equal
// times the earliest wins.
func latestAnchor(msgs []*dmsg) *dmsg {
	var best *dmsg
	for _, m := range msgs {
		if m.anchor && (best == nil || m.at > best.at) {
			best = m
		}
	}
	return best
}

// anchorID is the parent id a repair writes to attach a turn after m: a
// compressed group stands for the last message it hides, which is what a
// message written after the compression names.
func (m *dmsg) anchorID() string {
	if m.role == "compressedGroup" {
		if last, ok := lastCompressedID(m.fields); ok && last != "" {
			return last
		}
	}
	return m.id
}

func ids(msgs []*dmsg) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.id
	}
	return out
}

// segmentSplits: every root after the earliest that starts with a user
// turn is a section that broke off. It is reattached to the newest message
// written before it that can carry a turn. A parentless assistant is a
// lost seed rather than a re-entry and is left for a person to judge.
func (d *doctor) segmentSplits() {
	var roots []*dmsg
	for _, m := range d.sorted {
		if _, ok := d.byID[m.parent]; !ok || m.parent == "" {
			roots = append(roots, m)
		}
	}
	if len(roots) < 2 {
		return
	}
	before := d.anchorsByTime()
	for _, root := range roots[1:] {
		if root.role != "user" {
			continue
		}
		section := d.subtree(root.id)
		if !slices.ContainsFunc(section, func(m *dmsg) bool { return m.substance }) {
			continue
		}
		in := make(map[*dmsg]bool, len(section))
		for _, m := range section {
			in[m] = true
		}
		anchor := before.latest(root.at, in)
		if anchor == nil {
			continue
		}
		d.report(Finding{
			Kind:                 KindSegmentSplit,
			MessageID:            root.id,
			ReattachedMessageIDs: ids(section),
			Explanation:          "a user turn was written without its parent, so this section starts a second root: shown out of order and without the history before it; the repair attaches it after " + anchor.anchorID(),
			Repair:               &Repair{Op: RepairReparent, MessageID: root.id, ParentID: anchor.anchorID()},
		})
	}
}

// anchorTimeline is the messages a turn may follow, by time, for finding
// the newest one written before a given time in O(log n): segmentSplits
// asks once per stranded root, and a conversation of thousands of
// parentless turns would make a scan per root quadratic (BenchmarkDiagnose,
// flat-10000).
type anchorTimeline struct {
	msgs     []*dmsg // by time, then by position in doctor.sorted
	runStart []int   // the index of the first message with the same time
}

func (d *doctor) anchorsByTime() anchorTimeline {
	var tl anchorTimeline
	for _, m := range d.sorted {
		if m.anchor && !math.IsNaN(m.at) {
			tl.msgs = append(tl.msgs, m)
		}
	}
	slices.SortStableFunc(tl.msgs, func(a, b *dmsg) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return a.pos - b.pos
	})
	tl.runStart = make([]int, len(tl.msgs))
	for i := range tl.msgs {
		if i > 0 && tl.msgs[i].at == tl.msgs[i-1].at {
			tl.runStart[i] = tl.runStart[i-1]
		} else {
			tl.runStart[i] = i
		}
	}
	return tl
}

// latest returns the newest message written before t that is not in
// skip, the earliest in time order among equals (as a stable sort by
// descending time puts first), or nil. The work beyond the search is
// bounded by the size of skip.
func (tl anchorTimeline) latest(t float64, skip map[*dmsg]bool) *dmsg {
	i, _ := slices.BinarySearchFunc(tl.msgs, t, func(m *dmsg, t float64) int {
		if m.at < t {
			return -1
		}
		return 1
	})
	i--
	for i >= 0 && skip[tl.msgs[i]] {
		i--
	}
	if i < 0 {
		return nil
	}
	j := tl.runStart[i]
	for skip[tl.msgs[j]] {
		j++
	}
	return tl.msgs[j]
}

// concurrentForks: a user turn and an assistant continuation under the same
// parent whose subtrees overlap in time were racing (a branch the user chose
// starts after its sibling finished). The user turn moves to the end of the
// run it interrupted.
func (d *doctor) concurrentForks() {
	for _, pid := range d.parents {
		var users, runs []*dmsg
		branches := 0
		for _, c := range d.children[pid] {
			switch c.role {
			case "tool":
				continue
			case "user":
				users = append(users, c)
			case "assistant":
				runs = append(runs, c)
			}
			branches++
		}
		if branches < 2 || len(users) == 0 || len(runs) == 0 {
			continue
		}
		for _, u := range users {
			for _, r := range runs {
				// Only a race that hides something is reported.
				if !(u.lo <= r.hi && r.lo <= u.hi) || !(u.dropped || r.dropped) {
					continue
				}
				userTree, runTree := d.subtree(u.id), d.subtree(r.id)
				hidden := d.restorable(append(slices.Clone(userTree), runTree...))
				if len(hidden) == 0 {
					continue
				}
				inRun := slices.ContainsFunc(runTree, func(m *dmsg) bool { return m.id == u.id })
				anchor := latestAnchor(runTree)
				f := Finding{
					Kind:             KindConcurrentFork,
					MessageID:        pid,
					HiddenMessageIDs: hidden,
					Explanation:      "user turn " + u.id + " was written while the run from " + r.id + " was still writing, so both continue " + pid + " and the reader shows only one",
				}
				if anchor != nil && !inRun {
					f.Repair = &Repair{Op: RepairReparent, MessageID: u.id, ParentID: anchor.anchorID()}
					f.Explanation += "; the repair moves the user turn after " + anchor.id
				}
				d.report(f)
			}
		}
	}
}

// orphanSignalTurns: a signal callback turn must hang off the tool result
// that triggered it; under an assistant it is neither on the main chain nor
// among a tool's callbacks. Only those Parse actually drops are reported,
// re-anchored on the tool result the signal names, or else the newest
// earlier tool result.
func (d *doctor) orphanSignalTurns() {
	for _, m := range d.sorted {
		sig, ok := m.signal()
		if !ok || m.parent == "" {
			continue
		}
		if p, ok := d.byID[m.parent]; (ok && p.role == "tool") || !m.dropped {
			continue
		}
		own := d.subtree(m.id)
		hidden := d.restorable(own)
		if len(hidden) == 0 {
			continue
		}
		in := make(map[*dmsg]bool, len(own))
		for _, o := range own {
			in[o] = true
		}
		var named, newest *dmsg
		for _, c := range d.sorted {
			if c.role != "tool" || !(c.at < m.at) || in[c] {
				continue
			}
			if tc, _ := c.fields["tool_call_id"].(string); named == nil && tc != "" && tc == sig {
				named = c
			}
			newest = c
		}
		anchor := named
		if anchor == nil {
			anchor = newest
		}
		f := Finding{
			Kind:             KindOrphanSignalTurn,
			MessageID:        m.id,
			HiddenMessageIDs: hidden,
			Explanation:      "signal turn " + m.id + " hangs off " + m.parent + " instead of the tool result that triggered it, and the reader drops it",
		}
		if anchor != nil {
			f.Repair = &Repair{Op: RepairReparent, MessageID: m.id, ParentID: anchor.id}
			f.Explanation += "; the repair moves it under " + anchor.id
		}
		d.report(f)
	}
}

// staleBranchIndexes: an activeBranchIndex at or past the number of
// branches (left over from a regenerate that never landed) shows no branch
// at all. It is pointed back at the newest branch. An index above a single
// child is never consulted, and an index in range is the user's choice:
// both are left alone.
func (d *doctor) staleBranchIndexes() {
	for _, pid := range d.parents {
		parent := d.byID[pid]
		var branches []*dmsg
		for _, c := range d.children[pid] {
			if c.role != "tool" {
				branches = append(branches, c)
			}
		}
		if len(branches) < 2 {
			continue
		}
		md, _ := parent.fields["metadata"].(map[string]any)
		index, ok := md["activeBranchIndex"].(float64)
		if !ok || index < float64(len(branches)) {
			continue
		}
		var all []*dmsg
		for _, b := range branches {
			all = append(all, d.subtree(b.id)...)
		}
		hidden := d.restorable(all)
		if len(hidden) == 0 {
			continue
		}
		d.report(Finding{
			Kind:             KindStaleBranchIndex,
			MessageID:        pid,
			HiddenMessageIDs: hidden,
			Explanation:      "metadata.activeBranchIndex of " + pid + " points past its branches, so none is shown; the repair selects the newest branch",
			Repair:           &Repair{Op: RepairSetBranchIndex, MessageID: pid, Index: len(branches) - 1},
		})
	}
}

// lostContent: two or more empty assistant rows in a parent chain mean a
// stretch of the conversation never reached storage. A single empty row is
// a harmless turn end, and the newest message may be a placeholder a run
// is still filling, so neither is reported.
func (d *doctor) lostContent() {
	if len(d.sorted) == 0 {
		return
	}
	newest := d.sorted[len(d.sorted)-1]
	shells := map[*dmsg]bool{}
	for _, m := range d.sorted {
		if m != newest && m.parent != "" && m.isEmptyShell() {
			shells[m] = true
		}
	}
	for _, m := range d.sorted {
		if !shells[m] || shells[d.byID[m.parent]] {
			continue
		}
		var chain []*dmsg
		seen := map[*dmsg]bool{}
		for c := m; c != nil && !seen[c]; {
			seen[c] = true
			chain = append(chain, c)
			var next *dmsg
			for _, k := range d.children[c.id] {
				if shells[k] {
					next = k
					break
				}
			}
			c = next
		}
		if len(chain) < 2 {
			continue
		}
		d.report(Finding{
			Kind:           KindLostContent,
			MessageID:      m.id,
			LostMessageIDs: ids(chain),
			Explanation:    "a chain of assistant messages was created but never filled in; their content never reached storage and cannot be restored",
		})
	}
}

// hasSubstance reports whether m would show anything: text, reasoning, an
// error, tool calls or attachments. Token usage alone shows nothing.
func (m *dmsg) hasSubstance() bool {
	f := m.fields
	if s, ok := f["content"].(string); ok {
		if strings.TrimSpace(s) != "" {
			return true
		}
	} else if truthy(f["content"]) {
		return true
	}
	if truthy(f["reasoning"]) || truthy(f["error"]) {
		return true
	}
	for _, k := range [...]string{"tools", "imageList", "fileList", "audioList"} {
		if l, ok := f[k].([]any); ok && len(l) > 0 {
			return true
		}
	}
	return false
}

// isEmptyShell reports whether m is an assistant row that carries nothing,
// not even token usage (a turn-final assistant with only usage is a shape
// the writer makes on purpose).
func (m *dmsg) isEmptyShell() bool {
	if m.role != "assistant" || m.hasSubstance() || truthy(m.fields["usage"]) {
		return false
	}
	md, _ := m.fields["metadata"].(map[string]any)
	return !truthy(md["usage"])
}

// signal returns metadata.signal.sourceToolCallId of a toolless assistant
// tagged with a signal, and whether it is one.
func (m *dmsg) signal() (sourceToolCallID string, ok bool) {
	if m.role != "assistant" {
		return "", false
	}
	if l, _ := m.fields["tools"].([]any); len(l) > 0 {
		return "", false
	}
	md, _ := m.fields["metadata"].(map[string]any)
	if !truthy(md["signal"]) {
		return "", false
	}
	sig, _ := md["signal"].(map[string]any)
	id, _ := sig["sourceToolCallId"].(string)
	return id, true
}

// canAnchor reports whether a turn may follow m: tool results and signal
// turns never end a chain, and neither does an empty row.
func (m *dmsg) canAnchor() bool {
	_, sig := m.signal()
	return m.role != "tool" && !sig && !m.isEmptyShell()
}
