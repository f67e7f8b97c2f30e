package conversation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The context-tree builder turns the id tree into semantic nodes: plain
// messages, assistant runs, compare columns, councils, task fans and branch
// points with every alternative kept in full.
//
// The walk is iterative: a stack of pending steps replaces the reference's
// recursion, so a conversation of any depth cannot exhaust the goroutine
// stack. A step either transforms a message into an output list or gives a
// branch node its id once its branches are done (ids are numbered in the
// order the reference's recursion finishes them).

type treeStep struct {
	msg    int32
	out    *[]Node
	branch bool // assign the branch node at (*out)[at] its id
	at     int
	depth  int // branch points above this step
}

type treeBuilder struct {
	ix       *index
	col      *collector
	nextID   int
	stack    []treeStep
	maxDepth int // most nested branch points allowed; 0: no limit
	// sizeHint is the room to make for the top-level nodes: the length of
	// the flat list, when known, which is about the top level's (a chain
	// is a node a message at the top; a branch nests what follows it).
	// It spares the regrowth of the list, which was most of what building
	// a chain's tree allocated.
	sizeHint int
	depth    int // of the step being transformed
	err      error
}

// nodeID numbers generated node ids across the whole parse.
func (t *treeBuilder) nodeID(prefix, id string) string {
	s := prefix + "-" + id + "-" + strconv.Itoa(t.nextID)
	t.nextID++
	return s
}

// build transforms every root of the id tree.
func (t *treeBuilder) build() ([]Node, error) {
	out := make([]Node, 0, max(len(t.ix.mainRoots), t.sizeHint))
	for _, r := range t.ix.mainRoots {
		t.run(r, &out)
		if t.err != nil {
			return nil, t.err
		}
	}
	return out, nil
}

func (t *treeBuilder) push(msg int32, out *[]Node) {
	t.stack = append(t.stack, treeStep{msg: msg, out: out, depth: t.depth})
}

// pushAll schedules the transformation of msgs, in order, into out.
func (t *treeBuilder) pushAll(msgs []int32, out *[]Node) {
	for i := len(msgs) - 1; i >= 0; i-- {
		t.push(msgs[i], out)
	}
}

func (t *treeBuilder) run(root int32, out *[]Node) {
	t.depth = 0
	t.push(root, out)
	for len(t.stack) > 0 && t.err == nil {
		s := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.depth = s.depth
		if s.branch {
			n := &(*s.out)[s.at]
			n.ID = t.nodeID("branch", n.Info.ParentMessageID)
			continue
		}
		t.transform(s.msg, s.out)
	}
}

func msgNode(id string) Node { return Node{Type: NodeMessage, ID: id} }

// transform handles one message; what follows it in the same list is
// scheduled on the stack (a single follower is handled in the loop itself).
func (t *treeBuilder) transform(i int32, out *[]Node) {
	ix := t.ix
	for {
		m := ix.msg(i)
		kids := ix.mainKidsOf(i)

		// Compare mode flagged on the message: its children are the columns.
		if m.flags&flagCompare != 0 && len(kids) > 1 {
			*out = append(*out, msgNode(m.ID()))
			cmp := t.compareFromChildren(i)
			*out = append(*out, cmp)
			next, ok := t.activeColumnFollower(kids, cmp)
			if !ok {
				return
			}
			i = next
			continue
		}

		// Compare mode from a message group.
		if g := t.compareGroup(m); g != nil {
			cmp := t.compareFromGroup(g, m)
			*out = append(*out, cmp)
			next, ok := t.activeColumnFollower(kids, cmp)
			if !ok {
				return
			}
			i = next
			continue
		}

		// A council: every member answers; the supervisor's reply hangs under
		// one of them, and whichever has children carries it on.
		if m.flags&flagCouncil != 0 && len(kids) > 1 {
			*out = append(*out, t.councilNode(i))
			var follow []int32
			for _, k := range kids {
				if mk := ix.mainKidsOf(k); len(mk) > 0 {
					follow = append(follow, mk[0])
				}
			}
			t.pushAll(follow, out)
			return
		}

		// Several async tasks spawned together.
		if t.isTasksNode(kids) {
			*out = append(*out, t.tasksNode(i, kids))
			var follow []int32
			for _, k := range kids {
				if ix.msg(k).Role() != "task" {
					follow = append(follow, k)
				}
			}
			for _, k := range kids {
				if ix.msg(k).Role() != "task" {
					continue
				}
				for _, g := range ix.mainKidsOf(k) {
					if ix.msg(g).Role() != "task" {
						follow = append(follow, g)
					}
				}
			}
			t.pushAll(follow, out)
			return
		}

		// An assistant run with tool calls.
		if t.isAssistantGroup(i) {
			*out = append(*out, t.assistantGroupNode(i))
			next, ok := t.nextAfterTools(i)
			if !ok {
				return
			}
			i = next
			continue
		}

		// A branch point: several non-tool children.
		nonTool := 0
		for _, k := range kids {
			if ix.msg(k).Role() != "tool" {
				nonTool++
			}
		}
		if nonTool > 1 {
			*out = append(*out, msgNode(m.ID()))
			t.branchNode(i, kids, out)
			return
		}

		*out = append(*out, msgNode(m.ID()))
		if len(kids) != 1 {
			return
		}
		i = kids[0]
	}
}

// activeColumnFollower returns the first child of a compare node's active
// column, where the conversation carries on.
func (t *treeBuilder) activeColumnFollower(kids []int32, cmp Node) (int32, bool) {
	c := cmp.Info
	if !c.HasActiveColumn || c.ActiveColumnID == "" {
		return 0, false
	}
	for _, k := range kids {
		if t.ix.msg(k).ID() == c.ActiveColumnID {
			if mk := t.ix.mainKidsOf(k); len(mk) > 0 {
				return mk[0], true
			}
			return 0, false
		}
	}
	return 0, false
}

func (t *treeBuilder) compareGroup(m *Message) *MessageGroup {
	if m.groupID() == "" {
		return nil
	}
	if g := t.ix.groups[m.groupID()]; g != nil && g.mode == "compare" {
		return g
	}
	return nil
}

func (t *treeBuilder) isAssistantGroup(i int32) bool {
	m := t.ix.msg(i)
	if m.Role() != "assistant" {
		return false
	}
	for _, k := range t.ix.mainKidsOf(i) {
		if t.ix.msg(k).Role() == "tool" {
			return true
		}
	}
	return t.col.isToolChainHead(i)
}

func (t *treeBuilder) isTasksNode(kids []int32) bool {
	if len(kids) < 2 {
		return false
	}
	n := 0
	for _, k := range kids {
		if t.ix.msg(k).Role() == "task" {
			n++
		}
	}
	return n > 1
}

func (t *treeBuilder) tasksNode(i int32, kids []int32) Node {
	var ids []string
	n := Node{Type: NodeTasks, Info: &NodeInfo{MessageID: t.ix.msg(i).ID()}}
	for _, k := range kids {
		if t.ix.msg(k).Role() == "task" {
			id := t.ix.msg(k).ID()
			ids = append(ids, id)
			n.Children = append(n.Children, msgNode(id))
		}
	}
	n.ID = "tasks-" + n.Info.MessageID + "-" + strings.Join(ids, "-")
	return n
}

// branchNode appends a branch point with every alternative transformed in
// full; the alternatives are scheduled, and the node's id is assigned after
// them.
func (t *treeBuilder) branchNode(i int32, kids []int32, out *[]Node) {
	m := t.ix.msg(i)
	ch := activeBranch(m, kids, func(k int32) bool { return len(t.ix.mainKidsOf(k)) > 0 })
	br := &NodeInfo{ParentMessageID: m.ID(), ActiveBranchIndex: ch.pos}
	if ch.optimistic {
		br.ActiveBranchIndex = len(kids)
	}
	if t.maxDepth > 0 && t.depth >= t.maxDepth {
		t.err = fmt.Errorf("%w: more than %d nested branch points", ErrTooDeep, t.maxDepth)
		return
	}
	br.Branches = make([][]Node, len(kids))
	*out = append(*out, Node{Type: NodeBranch, Info: br})
	t.stack = append(t.stack, treeStep{branch: true, out: out, at: len(*out) - 1})
	t.depth++
	for j := len(kids) - 1; j >= 0; j-- {
		br.Branches[j] = []Node{}
		t.push(kids[j], &br.Branches[j])
	}
	t.depth--
}

// compareFromChildren builds a compare node whose columns are the children
// of message i.
func (t *treeBuilder) compareFromChildren(i int32) Node {
	ix := t.ix
	m := ix.msg(i)
	c := &NodeInfo{MessageID: m.ID()}
	n := Node{Type: NodeCompare, Info: c}
	ids := make([]string, 0, len(ix.mainKidsOf(i)))
	for _, k := range ix.mainKidsOf(i) {
		km := ix.msg(k)
		ids = append(ids, km.ID())
		if km.flags&flagActiveColumn != 0 {
			c.ActiveColumnID, c.HasActiveColumn = km.ID(), true
		}
		if t.isAssistantGroup(k) {
			c.Columns = append(c.Columns, []Node{t.assistantGroupNode(k)})
		} else {
			c.Columns = append(c.Columns, []Node{msgNode(km.ID())})
		}
	}
	n.ID = "compare-" + m.ID() + "-" + strings.Join(ids, "-")
	return n
}

// compareFromGroup builds a compare node whose columns are the members of a
// message group.
func (t *treeBuilder) compareFromGroup(g *MessageGroup, m *Message) Node {
	c := &NodeInfo{Columns: [][]Node{}}
	n := Node{Type: NodeCompare, Info: c}
	for _, gm := range t.ix.msgs {
		if gm.groupID() != g.id.s {
			continue
		}
		if gm.flags&flagActiveColumn != 0 && !c.HasActiveColumn {
			c.ActiveColumnID, c.HasActiveColumn = gm.ID(), true
		}
		c.Columns = append(c.Columns, []Node{msgNode(gm.ID())})
	}
	n.ID = t.nodeID("compare", g.id.s)
	c.MessageID = m.ID()
	if pm, ok := g.fields["parentMessageId"]; ok && truthy(pm) {
		if s, ok := pm.(string); ok {
			c.MessageID = s
		}
	}
	return n
}

// councilNode builds an agentCouncil node from the children of message i.
func (t *treeBuilder) councilNode(i int32) Node {
	ix := t.ix
	m := ix.msg(i)
	n := Node{Type: NodeAgentCouncil, Info: &NodeInfo{MessageID: m.ID()}}
	ids := make([]string, 0, len(ix.mainKidsOf(i)))
	for _, k := range ix.mainKidsOf(i) {
		ids = append(ids, ix.msg(k).ID())
		if t.isAssistantGroup(k) {
			n.Children = append(n.Children, t.assistantGroupNode(k))
		} else {
			n.Children = append(n.Children, msgNode(ix.msg(k).ID()))
		}
	}
	n.ID = "agentCouncil-" + m.ID() + "-" + strings.Join(ids, "-")
	return n
}

// assistantGroupNode builds the node of the run starting at assistant i:
// its steps, then the signal-callback blocks of its tools, then post-task
// summaries.
func (t *treeBuilder) assistantGroupNode(i int32) Node {
	ix := t.ix
	agent := ix.msg(i).agentID()
	n := Node{Type: NodeAssistantGroup, ID: ix.msg(i).ID()}
	for cur, ok := i, true; ok; cur, ok = t.chainContinuation(cur, agent) {
		step := msgNode(ix.msg(cur).ID())
		for _, k := range ix.mainKidsOf(cur) {
			if ix.msg(k).Role() == "tool" {
				step.Tools = append(step.Tools, ix.msg(k).ID())
			}
		}
		n.Children = append(n.Children, step)
	}
	n.Children = append(n.Children, t.signalCallbackNodes(i)...)
	n.Children = append(n.Children, t.taskCompletionNodes(i)...)
	return n
}

// chainContinuation finds the next step of a run in the id tree; see
// collector.findFlatChainContinuation for the rules. Tool results' children
// come before the assistant's own children when createdAt ties.
func (t *treeBuilder) chainContinuation(i int32, agent key) (int32, bool) {
	ix := t.ix
	var cands []int32
	fanOut := false
	for _, k := range ix.mainKidsOf(i) {
		if ix.msg(k).Role() != "tool" {
			continue
		}
		if t.col.isFanOutTool(k, ix.mainKidsOf(k)) {
			fanOut = true
			continue
		}
		cands = append(cands, ix.mainKidsOf(k)...)
	}
	if !fanOut {
		for _, k := range ix.mainKidsOf(i) {
			if ix.msg(k).Role() != "tool" {
				cands = append(cands, k)
			}
		}
	}
	eligible := cands[:0:0]
	for _, k := range cands {
		if ix.msg(k).isChainStep(agent) {
			eligible = append(eligible, k)
		}
	}
	t.col.sortByCreated(eligible)
	return t.col.resolveActiveContinuation(eligible)
}

// mainChainWalk visits the tool results along the main chain of the run at
// assistant i, depth first, calling visit for each tool result.
func (t *treeBuilder) mainChainWalk(i int32, visit func(tool int32)) {
	ix := t.ix
	agent := ix.msg(i).agentID()
	type frame struct {
		node int32
		next int // index into mainKids[node]
	}
	visited := map[int32]bool{i: true}
	stack := []frame{{node: i}}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		kids := ix.mainKidsOf(f.node)
		if f.next >= len(kids) {
			stack = stack[:len(stack)-1]
			continue
		}
		tool := kids[f.next]
		f.next++
		if ix.msg(tool).Role() != "tool" {
			continue
		}
		visit(tool)
		for _, k := range ix.mainKidsOf(tool) {
			if ix.msg(k).isChainStep(agent) {
				if !visited[k] {
					visited[k] = true
					stack = append(stack, frame{node: k})
				}
				break
			}
		}
	}
}

// signalCallbackNodes collects one signalCallbacks node per tool of the run
// whose children include callback replies.
func (t *treeBuilder) signalCallbackNodes(i int32) []Node {
	ix := t.ix
	var out []Node
	t.mainChainWalk(i, func(tool int32) {
		var cbs []int32
		for _, k := range ix.mainKidsOf(tool) {
			if ix.msg(k).isCallbackSignal() {
				cbs = append(cbs, k)
			}
		}
		if len(cbs) == 0 {
			return
		}
		t.col.sortBySequence(cbs)
		first := ix.msg(cbs[0]).signalOf()
		info := &NodeInfo{
			SourceToolMessageID: ix.msg(tool).ID(),
			SourceToolCallID:    first.sourceToolCall,
			HasSourceToolCallID: first.hasSourceCall,
			SourceToolName:      first.sourceToolName,
			HasSourceToolName:   first.hasSourceName,
		}
		for _, c := range cbs {
			info.Callbacks = append(info.Callbacks, msgNode(ix.msg(c).ID()))
		}
		n := Node{Type: NodeSignalCallbacks, ID: "signalCallbacks-" + ix.msg(tool).ID(), Info: info}
		out = append(out, n)
	})
	return out
}

// taskCompletionNodes collects the post-task summaries of the run's agent
// among the children of its tools.
func (t *treeBuilder) taskCompletionNodes(i int32) []Node {
	ix := t.ix
	agent := ix.msg(i).agentID()
	var out []Node
	t.mainChainWalk(i, func(tool int32) {
		for _, k := range ix.mainKidsOf(tool) {
			km := ix.msg(k)
			if km.agentID() == agent && km.isTaskCompletionSignal() {
				out = append(out, msgNode(km.ID()))
			}
		}
	})
	return out
}

// nextAfterTools finds where the conversation continues after the run at
// assistant i: a council or task-spawning last tool itself, else the first
// child of the run's last node.
func (t *treeBuilder) nextAfterTools(i int32) (int32, bool) {
	ix := t.ix
	agent := ix.msg(i).agentID()
	last := i
	for {
		next, ok := t.chainContinuation(last, agent)
		if !ok {
			break
		}
		last = next
	}
	var lastTool int32 = -1
	for _, k := range ix.mainKidsOf(last) {
		if ix.msg(k).Role() == "tool" {
			lastTool = k
		}
	}
	if lastTool >= 0 {
		last = lastTool
	}
	lm := ix.msg(last)
	if lm.Role() == "tool" {
		if lm.flags&flagCouncil != 0 {
			return last, true
		}
		if slices.ContainsFunc(ix.mainKidsOf(last), func(k int32) bool { return ix.msg(k).Role() == "task" }) {
			return last, true
		}
	}
	if mk := ix.mainKidsOf(last); len(mk) > 0 {
		return mk[0], true
	}
	return 0, false
}
