package conversation

import (
	"math"
	"slices"
)

// The message collector gathers the messages that render together: an
// assistant's tool results, the chain of assistant steps of one agent run
// (assistant → tools → assistant → ...), and the external-signal replies
// attached to a run's tools. Chains are read in both parentage forms: the
// next step may hang off the assistant itself (assistant-anchored) or off
// one of its tool results (tool-anchored), or any mix.

// markSet is a set of message positions: dense (one stamp per message,
// cleared in O(1) by moving to the next stamp, so a Conversation reuses it
// across walks) or sparse (a map, for the small sets of a chain collection).
type markSet struct {
	stamp  []uint32
	gen    uint32
	sparse map[int32]struct{}
	// journal, when set, lists the positions added to a dense set, in
	// order, so that a resumed walk can take them back (see perf_flat_resume.go).
	journal *markJournal
}

func newDenseSet(n int) *markSet { return &markSet{stamp: make([]uint32, n), gen: 1} }

func newSparseSet() *markSet { return &markSet{sparse: make(map[int32]struct{})} }

// reset empties a dense set and makes room for n positions.
func (s *markSet) reset(n int) {
	if n > len(s.stamp) {
		s.stamp = append(s.stamp, make([]uint32, n-len(s.stamp)+n/4)...)
	}
	s.journal = nil
	s.gen++
	if s.gen == 0 {
		clear(s.stamp)
		s.gen = 1
	}
}

func (s *markSet) has(i int32) bool {
	if s.sparse != nil {
		_, ok := s.sparse[i]
		return ok
	}
	return s.stamp[i] == s.gen
}

func (s *markSet) add(i int32) {
	if s.sparse != nil {
		s.sparse[i] = struct{}{}
		return
	}
	if s.stamp[i] != s.gen {
		s.stamp[i] = s.gen
		if j := s.journal; j != nil {
			j.ids = append(j.ids, i)
		}
	}
}

// hasTools reports whether an assistant carries tool calls.
func (m *Message) hasTools() bool { return len(m.tools()) > 0 }

// signalOf returns the external-signal lineage of a toolless assistant.
// An assistant with tools was on the main chain, whatever its tag says.
func (m *Message) signalOf() *signal {
	if m.Role() != "assistant" || m.hasTools() {
		return nil
	}
	return m.signal()
}

func (m *Message) isCallbackSignal() bool {
	s := m.signalOf()
	return s != nil && s.isCallback
}

func (m *Message) isTaskCompletionSignal() bool {
	s := m.signalOf()
	return s != nil && s.isTaskCompleted
}

// collector implements the collection rules over an index.
type collector struct {
	ix *index
}

// collectToolMessages returns the tool results of an assistant's tool calls,
// in call order: the message named by result_msg_id, else the first tool
// child of the assistant answering that call id.
func (c *collector) collectToolMessages(a int32) []int32 {
	am := c.ix.msg(a)
	if !am.hasTools() {
		return nil
	}
	var out []int32
	for _, t := range am.tools() {
		if t.resultMsgID != "" {
			if p, ok := c.ix.lookup(t.resultMsgID); ok && c.ix.msg(p).Role() == "tool" {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
				continue
			}
		}
		for _, k := range c.ix.rawKidsOf(a) {
			km := c.ix.msg(k)
			if km.Role() == "tool" && km.toolCallID() == t.id {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
				break
			}
		}
	}
	return out
}

// isFanOutTool reports whether a tool result starts a council or spawned
// async tasks; such a step does not continue linearly.
func (c *collector) isFanOutTool(t int32, kids []int32) bool {
	if c.ix.msg(t).flags&flagCouncil != 0 {
		return true
	}
	for _, k := range kids {
		if c.ix.msg(k).Role() == "task" {
			return true
		}
	}
	return false
}

// isChainStep reports whether m may continue a chain owned by agent.
func (m *Message) isChainStep(agent key) bool {
	return m.Role() == "assistant" && m.agentID() == agent && m.signalOf() == nil
}

// findFlatChainContinuation finds the next step of a chain after assistant
// cur whose tool results are tools: among the unprocessed same-agent
// assistants hanging off those results or off cur itself, the earliest, or
// the active one when they are branches of one parent.
func (c *collector) findFlatChainContinuation(cur int32, tools []int32, processed *markSet, agent key) (int32, bool) {
	var parents []int32
	fanOut := false
	for _, t := range tools {
		if c.isFanOutTool(t, c.ix.rawKidsOf(t)) {
			fanOut = true
			continue
		}
		if !slices.Contains(parents, t) {
			parents = append(parents, t)
		}
	}
	if !fanOut && !slices.Contains(parents, cur) {
		parents = append(parents, cur)
	}

	var cands []int32
	for _, p := range parents {
		for _, k := range c.ix.rawKidsOf(p) {
			km := c.ix.msg(k)
			if km.Role() != "tool" && !processed.has(k) && km.isChainStep(agent) {
				cands = append(cands, k)
			}
		}
	}
	if len(parents) > 1 {
		slices.Sort(cands) // input order, as a scan over all messages sees them
	}
	c.sortByCreated(cands)
	return c.resolveActiveContinuation(cands)
}

// sortByCreated orders positions by createdAt, keeping ties (and values that
// are not numbers) in their current order.
func (c *collector) sortByCreated(ps []int32) {
	if len(ps) < 2 {
		return
	}
	sortStableBy(ps, func(i int32) float64 { return c.ix.msg(i).createdAt })
}

// sortStableBy orders positions by a numeric key, keeping ties in their
// current order. A NaN key compares equal to everything, as the reference's
// `a - b` comparator makes it.
func sortStableBy(ps []int32, key func(int32) float64) {
	slices.SortStableFunc(ps, func(a, b int32) int {
		x, y := key(a), key(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
}

// resolveActiveContinuation picks among candidates sorted by createdAt: the
// earliest, unless several of them are sibling branches under the earliest's
// parent, in which case that parent's active branch decides.
func (c *collector) resolveActiveContinuation(sorted []int32) (int32, bool) {
	if len(sorted) == 0 {
		return 0, false
	}
	earliest := sorted[0]
	p := c.ix.parentOf(c.ix.msg(earliest))
	if p == noParent {
		return earliest, true
	}
	var siblings []int32
	for _, k := range c.ix.kidsOf(p) {
		if slices.Contains(sorted, k) {
			siblings = append(siblings, k)
		}
	}
	if len(siblings) <= 1 {
		return earliest, true
	}
	ch := activeBranch(c.ix.msg(p), siblings, func(s int32) bool { return len(c.ix.kidsOf(s)) > 0 })
	if ch.optimistic {
		return 0, false
	}
	return siblings[ch.pos], true
}

// isToolChainHead reports whether a toolless assistant answering a user is
// the narration that opens a tool-using run: following its same-agent
// continuations reaches a step with tools.
func (c *collector) isToolChainHead(a int32) bool {
	am := c.ix.msg(a)
	if am.Role() != "assistant" || am.hasTools() {
		return false
	}
	p := c.ix.parentOf(am)
	if p == noParent || c.ix.msg(p).Role() != "user" {
		return false
	}
	// Most assistants have no next step of their own (a user answers
	// them): that needs no walk, nor the set it keeps.
	agent := am.agentID()
	if !slices.ContainsFunc(c.ix.rawKidsOf(a), func(k int32) bool {
		km := c.ix.msg(k)
		return km.Role() != "tool" && km.isChainStep(agent)
	}) {
		return false
	}
	visited := newSparseSet()
	visited.add(a)
	cur := a
	for {
		next, ok := c.findFlatChainContinuation(cur, nil, visited, agent)
		if !ok {
			return false
		}
		if c.ix.msg(next).hasTools() {
			return true
		}
		visited.add(next)
		cur = next
	}
}

// collectAssistantChain collects the run that starts at assistant a: every
// step of the same agent, tool-using or not, and all their tool results.
func (c *collector) collectAssistantChain(a int32, processed *markSet) (chain, tools []int32) {
	cur := a
	for {
		if processed.has(cur) {
			return chain, tools
		}
		// Marking before descending keeps a tool result shared by several
		// assistants from looping the walk.
		processed.add(cur)
		chain = append(chain, cur)
		agent := c.ix.msg(chain[0]).agentID()
		own := c.collectToolMessages(cur)
		tools = append(tools, own...)

		next, ok := c.findFlatChainContinuation(cur, own, processed, agent)
		if !ok {
			return chain, tools
		}
		// Prose-only steps between tool calls still belong to the run.
		for ok && !c.ix.msg(next).hasTools() {
			chain = append(chain, next)
			processed.add(next)
			next, ok = c.findFlatChainContinuation(next, nil, processed, agent)
		}
		if !ok {
			return chain, tools
		}
		cur = next
	}
}

// signalBlock is one group of callback replies fired by one source tool.
type signalBlock struct {
	callbacks []int32
	source    int32
	first     *signal
}

// sortBySequence orders callbacks by metadata.signal.sequence; a missing
// sequence sorts last.
func (c *collector) sortBySequence(ps []int32) {
	seq := func(i int32) float64 {
		s := c.ix.msg(i).signalOf()
		if s == nil || !s.hasSequence {
			return math.Inf(1)
		}
		return s.sequence
	}
	sortStableBy(ps, seq)
}

// collectFlatSignalCallbacks finds, for each tool of a run, the callback
// replies among its children.
func (c *collector) collectFlatSignalCallbacks(tools []int32) []signalBlock {
	var blocks []signalBlock
	for _, t := range tools {
		var cbs []int32
		for _, k := range c.ix.rawKidsOf(t) {
			if c.ix.msg(k).isCallbackSignal() {
				cbs = append(cbs, k)
			}
		}
		if len(cbs) == 0 {
			continue
		}
		c.sortBySequence(cbs)
		blocks = append(blocks, signalBlock{callbacks: cbs, source: t, first: c.ix.msg(cbs[0]).signalOf()})
	}
	return blocks
}

// collectFlatTaskCompletions finds the post-task summaries among the
// children of a run's tools, in createdAt order.
func (c *collector) collectFlatTaskCompletions(tools []int32) []int32 {
	var out []int32
	for _, t := range tools {
		for _, k := range c.ix.rawKidsOf(t) {
			if c.ix.msg(k).isTaskCompletionSignal() {
				out = append(out, k)
			}
		}
	}
	c.sortByCreated(out)
	return out
}
